Feature: Nothing is misreported as changed (docs/design.md rule 4, seed 000)
  Applying the same declaration twice reports zero changes.

  Scenario: The second apply of a declaration changes nothing
    Given a mesh with nodes "novox"
    And module "route-proxy" with containers "proxy, ca, acme"
    And module "route-proxy" container "ca" mounts "/var/lib/route-proxy/ca"
    And module "route-proxy" is assigned to "novox"
    When the mesh is pushed to "novox"
    And node "novox" applies its latest declaration
    And node "novox" applies its latest declaration
    Then the apply report of "novox" reads "applied 4 resource(s)"
    And 0 resources were replaced on "novox" in the last pass
    And the event stream has 2 "apply.reported" events for "novox"
    And no churn is detected on "novox"
    And status of "novox" is converged

  Scenario: Many passes with nothing to do stay quiet
    Given a mesh with nodes "novox"
    And module "route-proxy" with containers "proxy, ca, acme"
    And module "route-proxy" is assigned to "novox"
    When 5 passes run on "novox"
    Then 0 resources were replaced on "novox" in the last pass
    And container "proxy" on "novox" was not replaced
    And no churn is detected on "novox"
