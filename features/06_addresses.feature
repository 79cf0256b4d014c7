Feature: Addresses are read where they are used (docs/design.md rule 6, seed 004)
  A port that is a node setting is resolved at compose time from what the node was given;
  a recorded build names its module, name and digest, never an address.

  Background:
    Given a mesh with nodes "novox, g14"
    And module "forge" with containers "web"

  Scenario: A port is read from the node at compose time
    Given node "novox" has port "store" set to 6852
    And module "forge" container "web" reads port "store" of its node as "STORE_PORT"
    And module "forge" is assigned to "novox"
    When 1 passes run on "novox"
    Then container "web" on "novox" has environment "STORE_PORT=6852"

  Scenario: A port the node was not given fails the compose, naming it (rule 1)
    Given module "forge" container "web" reads port "store" of its node as "STORE_PORT"
    And module "forge" is assigned to "novox"
    When the mesh is pushed to "novox"
    Then the push to "novox" fails naming "STORE_PORT"
    And no declaration was pushed to "novox"
    And status of "novox" shows a failed compose naming "port"

  Scenario: A port the node is given another value is read at the next compose
    Given node "novox" has port "store" set to 6852
    And module "forge" container "web" reads port "store" of its node as "STORE_PORT"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"
    When node "novox" has port "store" set to 6853
    And 1 passes run on "novox"
    Then container "web" on "novox" has environment "STORE_PORT=6853"
    And 1 resources were replaced on "novox" in the last pass

  Scenario: A first node, mid-genesis, reaches its own artifact store by loopback
    Given node "novox" holds the artifact store on port 5000
    And module "forge" container "web" runs artifact "forge/web" at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    And module "forge" is assigned to "novox"
    When 1 passes run on "novox"
    Then container "web" on "novox" runs image "127.0.0.1:5000/forge/web@sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"

  Scenario: Another node reaches the artifact store at its private address
    Given node "novox" holds the artifact store on port 5000
    And node "novox" has private address "10.1.0.3"
    And module "forge" container "web" runs artifact "forge/web" at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    And module "forge" is assigned to "g14"
    When 1 passes run on "g14"
    Then container "web" on "g14" runs image "10.1.0.3:5000/forge/web@sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"

  Scenario: No artifact store reachable is a setting that reaches nothing
    Given node "novox" holds the artifact store on port 5000
    And module "forge" container "web" runs artifact "forge/web" at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
    And module "forge" is assigned to "g14"
    When the mesh is pushed to "g14"
    Then the push to "g14" fails naming "no private address"
    And no declaration was pushed to "g14"
