Feature: Exiting a loop by luck is not a fix (docs/design.md rule 7, seed 000)
  Two heavy passes in a row with no operator command in between are a churn loop; a digest
  that alternates A→B→A is a flip. Both are detected from the event stream alone.

  Background:
    Given a mesh with nodes "novox"
    And module "route-proxy" with containers "proxy, ca, acme"
    And module "route-proxy" is assigned to "novox"

  Scenario: Containers removed behind the mesh's back every pass are a churn loop
    Given 1 passes run on "novox"
    When something outside the mesh removes every container on "novox" after each apply
    And 3 passes run on "novox"
    Then a churn loop is detected on "novox"
    And status of "novox" is not converged
    And the event stream has 4 "apply.reported" events for "novox"

  Scenario: The first heavy pass after an operator command is not a loop
    When 1 passes run on "novox"
    Then no churn is detected on "novox"
    And status of "novox" is converged

  Scenario: One heavy pass behind the mesh's back is not yet a loop
    Given 1 passes run on "novox"
    When something outside the mesh removes every container on "novox" after each apply
    And 2 passes run on "novox"
    Then no churn is detected on "novox"
    And 0 resources were replaced on "novox" in the last pass

  Scenario: A declaration digest that flips A→B→A is detected from the stream alone
    When the event stream receives:
      """
      {"stream": "node-novox", "type": "declaration.composed", "at": "2026-09-29T22:46:00Z", "data": {"node": "novox", "declaration": "novox/101", "digest": "sha256:aaaa", "roster": ["searxng.zurag.be"], "resources": [{"name": "proxy", "kind": "container", "module": "route-proxy", "digest": "sha256:01"}]}}
      {"stream": "node-novox", "type": "apply.reported", "at": "2026-09-29T22:47:00Z", "data": {"node": "novox", "declaration": "novox/101", "sent": 1, "applied": 1, "created": [], "replaced": [{"name": "proxy", "fields": ["env.ROSTER"]}], "removed": [], "held": [], "failed": [], "unchanged": 0}}
      {"stream": "node-novox", "type": "declaration.composed", "at": "2026-09-29T22:52:00Z", "data": {"node": "novox", "declaration": "novox/102", "digest": "sha256:bbbb", "roster": [], "resources": [{"name": "proxy", "kind": "container", "module": "route-proxy", "digest": "sha256:02"}]}}
      {"stream": "node-novox", "type": "apply.reported", "at": "2026-09-29T22:53:00Z", "data": {"node": "novox", "declaration": "novox/102", "sent": 1, "applied": 1, "created": [], "replaced": [{"name": "proxy", "fields": ["env.ROSTER"]}], "removed": [], "held": [], "failed": [], "unchanged": 0}}
      {"stream": "node-novox", "type": "declaration.composed", "at": "2026-09-29T22:58:00Z", "data": {"node": "novox", "declaration": "novox/103", "digest": "sha256:aaaa", "roster": ["searxng.zurag.be"], "resources": [{"name": "proxy", "kind": "container", "module": "route-proxy", "digest": "sha256:01"}]}}
      {"stream": "node-novox", "type": "apply.reported", "at": "2026-09-29T22:59:00Z", "data": {"node": "novox", "declaration": "novox/103", "sent": 1, "applied": 1, "created": [], "replaced": [{"name": "proxy", "fields": ["env.ROSTER"]}], "removed": [], "held": [], "failed": [], "unchanged": 0}}
      """
    Then a churn loop is detected on "novox"
    And the event stream has 3 "apply.reported" events for "novox"
