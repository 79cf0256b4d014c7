Feature: A changed mount path recreates the container, and says so (docs/design.md rule 5, seed 002)

  Scenario: A new mount path replaces exactly the container that mounts it
    Given a mesh with nodes "novox"
    And module "forge" with containers "web, runner"
    And module "forge" container "web" mounts "/var/lib/forge"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"
    When module "forge" container "web" mounts "/srv/forge"
    And 1 passes run on "novox"
    Then 1 resources were replaced on "novox" in the last pass
    And container "runner" on "novox" was not replaced
    And the apply report of "novox" reads "applied 4 resource(s)"
    And status of "novox" is converged
