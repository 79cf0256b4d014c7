Feature: Back to a moment (issue 21)
  mesh revert makes a module again what it was at a moment: its definition and the builds it ran
  then, as new events naming the revert, planned first; history stays as it was.

  Background:
    Given a mesh with nodes "novox"
    And node "novox" holds the artifact store on port 5000
    And module "forge" with containers "web, runner"
    And module "forge" container "web" runs artifact "forge/web" at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    And module "forge" container "web" mounts "/var/lib/forge"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"
    And the moment is kept as "good"
    And a build of "forge/web" at digest "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee" is recorded
    And module "forge" is deployed
    And module "forge" container "web" mounts "/srv/forge" instead of "/var/lib/forge"
    And 1 passes run on "novox"

  Scenario: A revert, planned first, runs again the build and the definition of then
    When the mesh is planned for "novox" after module "forge" is reverted to the moment "good"
    Then the plan for "novox" replaces "web" because "image"
    And the plan for "novox" replaces "web" because "mounts"
    When module "forge" is reverted to the moment "good"
    And 1 passes run on "novox"
    Then the last pass on "novox" did what the plan said
    And container "web" on "novox" runs image "127.0.0.1:5000/forge/web@sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    And container "runner" on "novox" was not replaced
    And the timeline of module "forge" reads "deployed again by mesh revert"
    And why container "web" on "novox" was last replaced names "deployed again by mesh revert"

  Scenario: A revert to what the module already is changes nothing
    Given module "forge" is reverted to the moment "good"
    And 1 passes run on "novox"
    When the mesh is planned for "novox" after module "forge" is reverted to the moment "good"
    Then the plan for "novox" changes nothing
