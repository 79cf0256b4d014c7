Feature: A failed compose stays visible until a compose succeeds (issue 20, docs/design.md, "Status has two axes")
  An agent applies the declaration it holds again every interval. That re-apply says nothing of
  the declaration that did not compose: the node stays failing, naming why, until a compose for
  it succeeds. A module assigned but absent from the applied declaration is pending, with the
  reason. A node that never reported is unknown, never converged.

  Background:
    Given a mesh with nodes "novox, g14"
    And module "opxweb" with containers "web"
    And module "opxweb" is assigned to "novox"
    And 1 passes run on "novox"

  Scenario: A module whose container name clashes: the failure outlives the agent's re-apply
    Given module "opxtypo2" with containers "web"
    When module "opxtypo2" is assigned to "novox"
    And 1 passes run on "novox"
    And node "novox" applies its latest declaration
    Then status of "novox" shows a failed compose naming "modules opxtypo2 and opxweb both claim web"
    And status of "novox" is not converged
    And status of "novox" shows "opxtypo2" pending because "modules opxtypo2 and opxweb both claim web"
    And the event stream has 1 "declaration.compose-failed" events for "novox"
    And the event stream has 3 "apply.reported" events for "novox"
    When module "opxtypo2" is released from "novox"
    And 1 passes run on "novox"
    Then status of "novox" is converged
    And container "web" on "novox" was not replaced
    And 0 resources were replaced on "novox" in the last pass

  Scenario: A module that does not compose is a failed compose naming it
    Given module "broken" does not compose
    When module "broken" is assigned to "novox"
    And 3 passes run on "novox"
    Then status of "novox" shows a failed compose naming "broken"
    And status of "novox" shows "broken" pending because "claims broken twice"
    And the event stream has 4 "apply.reported" events for "novox"

  Scenario: A module whose artifact has no build yet is pending until a build is deployed
    Given node "novox" holds the artifact store on port 5000
    And module "forge" with containers "app"
    And module "forge" container "app" runs artifact "forge/web" with no build yet
    When module "forge" is assigned to "novox"
    And 2 passes run on "novox"
    Then status of "novox" shows a failed compose naming "forge/web"
    And status of "novox" shows "forge" pending because "which has no recorded build"
    When a build of "forge/web" at digest "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0" is recorded
    And module "forge" is deployed
    And 1 passes run on "novox"
    Then status of "novox" is converged
    And container "app" on "novox" runs image "127.0.0.1:5000/forge/web@sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"

  Scenario: A node that never reported is unknown, even with a module assigned
    Given module "opxweb" is assigned to "g14"
    When the mesh is pushed to "g14"
    Then the health of "g14" is "unknown"
    And status of "g14" is not converged
