Feature: A container says how it is checked, published and restarted (issue 34)
  A published port is the node's setting, read at compose time (rule 6), bound to the node's
  private address; a setting the node does not have fails the compose, naming it (rule 1).
  A health check, the node's network and a publish are part of the container: a change
  replaces it, and the plan names the field.

  Background:
    Given a mesh with nodes "novox"
    And node "novox" has private address "10.1.0.3"
    And module "forge" with containers "web"

  Scenario: A published port is the node's setting, read at compose time
    Given node "novox" has port "http" set to 8080
    And module "forge" container "web" publishes port "http" of its node as 8080
    And module "forge" is assigned to "novox"
    When 1 passes run on "novox"
    Then container "web" on "novox" publishes port 8080
    When the port "http" of node "novox" is set to 8443
    And the mesh is planned for "novox"
    Then the plan for "novox" replaces "web" because "publish.8080"
    When 1 passes run on "novox"
    Then container "web" on "novox" publishes port 8443
    And 1 resources were replaced on "novox" in the last pass
    And the last pass on "novox" did what the plan said

  Scenario: A publish of a setting the node does not have fails the compose, naming it
    Given module "forge" container "web" publishes port "http" of its node as 8080
    And module "forge" is assigned to "novox"
    When the mesh is pushed to "novox"
    Then the push to "novox" fails naming "which was not given"
    And no declaration was pushed to "novox"
    And status of "novox" shows a failed compose naming "publishes port"

  Scenario: A changed health check replaces the container, and the plan names it
    Given module "forge" container "web" checks its health with "curl -f http://localhost:8080/"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"
    When module "forge" container "web" checks its health with "curl -f http://localhost:8080/healthz"
    And the mesh is planned for "novox"
    Then the plan for "novox" replaces "web" because "healthcheck.test"
    When 1 passes run on "novox"
    Then 1 resources were replaced on "novox" in the last pass

  Scenario: A container moved onto the node's network is replaced, and the plan names it
    Given module "forge" is assigned to "novox"
    And 1 passes run on "novox"
    When module "forge" container "web" uses the node's network
    And the mesh is planned for "novox"
    Then the plan for "novox" replaces "web" because "network"
    When 1 passes run on "novox"
    Then 1 resources were replaced on "novox" in the last pass
