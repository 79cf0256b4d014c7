Feature: Roll-outs that wait, and revert by themselves (issue 34)
  A module that rolls out start-first starts its new build beside the old one and stops the old one
  only once the new one is healthy. A new build that crash-loops is removed while the old one runs on,
  the roll-out is recorded as failed, and the module's update block says what follows: revert it to
  the moment before, or give up and revert nothing.

  Background:
    Given a mesh with nodes "novox"
    And node "novox" holds the artifact store on port 5000
    And module "forge" with containers "web"
    And module "forge" container "web" runs artifact "forge/web" at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"

  Scenario: A new build that crash-loops is reverted, the old build serving throughout
    Given module "forge" rolls out start-first and reverts a roll-out that fails its health check
    And 1 passes run on "novox"
    And a build of "forge/web" at digest "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee" is recorded
    And every container of image "127.0.0.1:5000/forge/web@sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee" exits with code 1 at every start
    When module "forge" is deployed
    And 1 passes run on "novox"
    Then module "forge" was reverted after a failed roll-out
    And module "forge" runs the build at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0" on "novox"
    When 1 passes run on "novox"
    Then module "forge" runs the build at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0" on "novox"

  Scenario: With pause, a failed roll-out gives up and reverts nothing
    Given module "forge" rolls out start-first and gives up on a roll-out that fails its health check
    And 1 passes run on "novox"
    And a build of "forge/web" at digest "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee" is recorded
    And every container of image "127.0.0.1:5000/forge/web@sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee" exits with code 1 at every start
    When module "forge" is deployed
    And 1 passes run on "novox"
    Then module "forge" was not reverted
    And module "forge" runs the build at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0" on "novox"
    When 1 passes run on "novox"
    Then module "forge" was not reverted
    And module "forge" runs the build at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0" on "novox"
