Feature: A container reaches another module's service at its node's address (issue 35, seed 004)
  A module provides a service on a port that is a setting of its node; a container that reaches it
  is given ADDRESS:PORT, the private address of the node running the provider and that node's
  setting, read at the consumer's compose (rule 6). A failed read of the provider's node aborts
  the consumer's compose, naming it (rule 1); a provider that runs nowhere fails it, naming it.

  Background:
    Given a mesh with nodes "novox, g14"
    And node "novox" has private address "10.1.0.3"
    And node "g14" has private address "10.1.0.4"
    And module "mesh-store" with containers "store"
    And module "forge" with containers "web"
    And module "mesh-store" provides "store" of kind "tcp" on port "store" of its node
    And module "forge" container "web" reaches "store" of module "mesh-store" as "STORE_ADDR"

  Scenario: The provider's port moves: the consumer's next declaration has the new address
    Given node "novox" has port "store" set to 5432
    And module "mesh-store" is assigned to "novox"
    And module "forge" is assigned to "g14"
    When 1 passes run on "g14"
    Then container "web" on "g14" has environment "STORE_ADDR=10.1.0.3:5432"
    When the port "store" of node "novox" is set to 6852
    And the mesh is planned for "g14"
    Then the plan for "g14" replaces "web" because "env.STORE_ADDR: 10.1.0.3:5432 → 10.1.0.3:6852"
    When 1 passes run on "g14"
    Then container "web" on "g14" has environment "STORE_ADDR=10.1.0.3:6852"
    And 1 resources were replaced on "g14" in the last pass
    And the last pass on "g14" did what the plan said

  Scenario: A provider assigned to no node fails the consumer's compose, naming it
    Given module "forge" is assigned to "g14"
    When the mesh is pushed to "g14"
    Then the push to "g14" fails naming "reaches store of module mesh-store, which is assigned to no node"
    And no declaration was pushed to "g14"
    And status of "g14" shows a failed compose naming "mesh-store"

  Scenario: The provider's node cannot be read: the consumer's push fails naming it
    Given node "novox" has port "store" set to 5432
    And module "mesh-store" is assigned to "novox"
    And module "forge" is assigned to "g14"
    And the store fails reads of node "novox"
    When the mesh is pushed to "g14"
    Then the push to "g14" fails naming "novox"
    And no declaration was pushed to "g14"
    And the event stream has 1 "declaration.compose-failed" events for "g14"

  Scenario: why names the binding behind a value, who moved it and when
    Given node "novox" has port "store" set to 5432
    And module "mesh-store" is assigned to "novox"
    And module "forge" is assigned to "g14"
    And 1 passes run on "g14"
    When the port "store" of node "novox" is set to 6852
    And 1 passes run on "g14"
    Then why container "web" on "g14" was last replaced names "env.STORE_ADDR from store of module mesh-store on novox (its port.store)"
    And why container "web" on "g14" was last replaced names "port.store set to 6852 on novox"
