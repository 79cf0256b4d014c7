Feature: A report that cannot be delivered is kept, not lost (docs/design.md rule 8, seed 000)
  "Applied, and could not tell the mesh": the agent keeps outcomes in an outbox and delivers
  them exactly once.

  Background:
    Given a mesh with nodes "novox"
    And module "route-proxy" with containers "proxy, ca, acme"
    And module "route-proxy" is assigned to "novox"

  Scenario: An apply made while the bus is cut is delivered once the bus is restored
    Given the mesh is pushed to "novox"
    When the bus to "novox" is cut
    And node "novox" applies its latest declaration
    Then the event stream has 0 "apply.reported" events for "novox"
    When the bus to "novox" is restored
    Then the event stream has 1 "apply.reported" events for "novox"
    And the event stream has 1 "report.delivered-late" events for "novox"
    And the apply report of "novox" reads "applied 3 resource(s)"

  Scenario: A push while the bus is cut fails, and says so
    Given the bus to "novox" is cut
    When the mesh is pushed to "novox"
    Then the push to "novox" fails naming "bus"
    And no declaration was pushed to "novox"

  Scenario: Reports kept across several applies are delivered once each, in order
    Given the mesh is pushed to "novox"
    And the bus to "novox" is cut
    And node "novox" applies its latest declaration
    And node "novox" applies its latest declaration
    When the bus to "novox" is restored
    And the bus to "novox" is restored
    Then the event stream has 2 "apply.reported" events for "novox"
    And the event stream has 2 "report.delivered-late" events for "novox"
