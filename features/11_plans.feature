Feature: Every change can be seen before it is made (seed 002, issue 126)
  mesh plan composes what the next push would send and asks the node's agent what it would do,
  appending nothing. The pass after it does what it said, resource by resource.

  Scenario: A plan after a mount move names the field, and predicts the replacement the push makes
    Given a mesh with nodes "novox"
    And module "forge" with containers "web, runner, db, cache"
    And module "forge" container "web" mounts "/var/lib/forge"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"
    When module "forge" container "web" mounts "/srv/forge" instead of "/var/lib/forge"
    And the mesh is planned for "novox"
    Then the plan for "novox" replaces "web" because "mounts./var/lib/forge"
    And the plan for "novox" is not heavy
    And the event stream has 1 "declaration.composed" events for "novox"
    When 1 passes run on "novox"
    Then the last pass on "novox" did what the plan said
    And 1 resources were replaced on "novox" in the last pass

  Scenario: A plan replacing half of a node's resources says it is heavy
    Given a mesh with nodes "novox"
    And module "forge" with containers "web, runner"
    And module "forge" container "web" mounts "/var/lib/forge"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"
    When module "forge" container "web" mounts "/srv/forge" instead of "/var/lib/forge"
    And the mesh is planned for "novox"
    Then the plan for "novox" is heavy
    When 1 passes run on "novox"
    Then the last pass on "novox" did what the plan said

  Scenario: A plan that would hold route-proxy's containers on an adopted node says so before the push
    Given a mesh with nodes "novox"
    And node "novox" is adopted
    And module "route-proxy" with containers "proxy, ca, acme"
    And module "route-proxy" container "ca" mounts "/var/lib/route-proxy/ca"
    And directory "/var/lib/route-proxy/ca" exists on node "novox"
    And module "route-proxy" is assigned to "novox"
    When the mesh is planned for "novox"
    Then the plan for "novox" holds "ca"
    And the plan for "novox" holds "/var/lib/route-proxy/ca"
    And no declaration was pushed to "novox"
    When 1 passes run on "novox"
    Then the last pass on "novox" did what the plan said
    And the apply report of "novox" reads "applied 2 resource(s), 2 held for untaken modules (route-proxy: 2)"

  Scenario: A plan after a deploy names the image, and the deploy then does it
    Given a mesh with nodes "novox"
    And node "novox" holds the artifact store on port 5000
    And module "forge" with containers "web, runner, db"
    And module "forge" container "web" runs artifact "forge/web" at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"
    And a build of "forge/web" at digest "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee" is recorded
    When the mesh is planned for "novox"
    Then the plan for "novox" changes nothing
    When the mesh is planned for "novox" after module "forge" is deployed
    Then the plan for "novox" replaces "web" because "image"
    And the event stream has 0 "module.deployed" events for "novox"
    When module "forge" is deployed
    And 1 passes run on "novox"
    Then the last pass on "novox" did what the plan said

  Scenario: A node that does not answer is planned from its last declaration, labelled so
    Given a mesh with nodes "novox"
    And module "forge" with containers "web, runner, db, cache"
    And module "forge" container "web" mounts "/var/lib/forge"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"
    And the bus to "novox" is cut
    When module "forge" container "web" mounts "/srv/forge" instead of "/var/lib/forge"
    And the mesh is planned for "novox"
    Then the plan for "novox" was made without its agent
    And the plan for "novox" replaces "web" because "mounts./var/lib/forge"
    When the bus to "novox" is restored
    And 1 passes run on "novox"
    Then the last pass on "novox" did what the plan said
