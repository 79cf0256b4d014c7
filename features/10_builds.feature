Feature: A build is not a deployment (seed 002, its issue 126)
  A manual module (the default) runs the build it was last deployed with; a recorded build
  waits for a deploy. A roll-out module deploys each recorded build at once, and says so.

  Background:
    Given a mesh with nodes "novox"
    And node "novox" holds the artifact store on port 5000
    And module "forge" with containers "web, runner"
    And module "forge" container "web" runs artifact "forge/web" at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"

  Scenario: A manual module's new build changes nothing until it is deployed
    When a build of "forge/web" at digest "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee" is recorded
    And 1 passes run on "novox"
    Then 0 resources were replaced on "novox" in the last pass
    And container "web" on "novox" runs image "127.0.0.1:5000/forge/web@sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    When module "forge" is deployed
    And 1 passes run on "novox"
    Then 1 resources were replaced on "novox" in the last pass
    And container "web" on "novox" runs image "127.0.0.1:5000/forge/web@sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee"
    And container "runner" on "novox" was not replaced
    And why container "web" on "novox" was last replaced names "deployed by mesh deploy"
    And why container "web" on "novox" was last replaced names "recorded at sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee"

  Scenario: A deploy at a digest rolls back to an earlier build
    Given a build of "forge/web" at digest "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee" is recorded
    And module "forge" is deployed
    And 1 passes run on "novox"
    When module "forge" is deployed at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    And 1 passes run on "novox"
    Then 1 resources were replaced on "novox" in the last pass
    And container "web" on "novox" runs image "127.0.0.1:5000/forge/web@sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"

  Scenario: A roll-out module's build replaces its containers, and the timeline names the policy
    Given module "forge" upgrades by roll-out
    When a build of "forge/web" at digest "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee" is recorded
    And 1 passes run on "novox"
    Then 1 resources were replaced on "novox" in the last pass
    And container "web" on "novox" runs image "127.0.0.1:5000/forge/web@sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee"
    And the timeline of module "forge" reads "deployed by roll-out policy"
    And why container "web" on "novox" was last replaced names "deployed by roll-out policy"

  Scenario: A history recorded before upgrade policies composes as it did: each build was a deployment
    When the event stream receives:
      """
      {"stream": "module-forge", "type": "artifact.recorded", "data": {"module": "forge", "name": "forge/web", "digest": "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee"}}
      """
    And 1 passes run on "novox"
    Then 1 resources were replaced on "novox" in the last pass
    And container "web" on "novox" runs image "127.0.0.1:5000/forge/web@sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee"
