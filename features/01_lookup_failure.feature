Feature: A lookup failure is an error, never "not found" (docs/design.md rule 1, seed 000)
  Composing a node's declaration reads every other node's plan to gather routed names.
  A read that fails aborts the compose, names the node and the read, and pushes nothing;
  only a node whose own module set does not compose is passed over.

  Background:
    Given a mesh with nodes "novox, g14"
    And module "searxng" with containers "searxng"
    And module "searxng" routes name "searxng.zurag.be"
    And module "route-proxy" with containers "proxy, ca, acme"
    And module "searxng" is assigned to "g14"
    And module "route-proxy" is assigned to "novox"

  Scenario: The store cannot read another node: the push fails naming it, and nothing is pushed
    Given the store fails reads of node "g14"
    When the mesh is pushed to "novox"
    Then the push to "novox" fails naming "g14"
    And no declaration was pushed to "novox"
    And the event stream has 1 "declaration.compose-failed" events for "novox"

  Scenario: A store that fails on every other pass does not flip the roster (the seed's loop)
    Given 1 passes run on "novox"
    When the store fails reads of node "g14" on every other pass
    And 6 passes run on "novox"
    Then the roster of "novox" contains "searxng.zurag.be"
    And the event stream has 3 "declaration.compose-failed" events for "novox"
    And no churn is detected on "novox"
    And container "proxy" on "novox" was not replaced
    And 0 resources were replaced on "novox" in the last pass

  Scenario: Once the store recovers, the push goes through with every name
    Given the store fails reads of node "g14"
    And the mesh is pushed to "novox"
    When the store recovers
    And the mesh is pushed to "novox"
    Then the roster of "novox" contains "searxng.zurag.be"
    And the event stream has 1 "declaration.pushed" events for "novox"

  Scenario: A node whose module set does not compose is passed over, and costs the others nothing
    Given a mesh with nodes "ace"
    And module "broken" does not compose
    And module "ace-web" with containers "web"
    And module "ace-web" routes name "ace.novox.be"
    And module "ace-web" is assigned to "ace"
    And module "broken" is assigned to "ace"
    When the mesh is pushed to every node
    Then the roster of "novox" contains "searxng.zurag.be"
    And the roster of "novox" does not contain "ace.novox.be"
    And the push to "ace" fails naming "claims broken twice"
    And no declaration was pushed to "ace"

  Scenario: Faults on every other pass count pushes too
    Given the store fails reads of node "g14" on every other pass
    When the mesh is pushed to "novox"
    And the mesh is pushed to "novox"
    And the mesh is pushed to "novox"
    Then the event stream has 2 "declaration.compose-failed" events for "novox"
    And the event stream has 1 "declaration.pushed" events for "novox"
