Feature: The roster is not part of a container's identity (docs/design.md rule 2, seed 000 and its issue 151)
  A new or removed routed name updates the hosts file the containers mount, in place;
  it never recreates a container.

  Background:
    Given a mesh with nodes "novox, g14"
    And module "route-proxy" with containers "proxy, ca, acme"
    And module "route-proxy" routes name "proxy.novox.be"
    And module "route-proxy" is assigned to "novox"
    And module "searxng" with containers "searxng"
    And module "searxng" routes name "searxng.zurag.be"

  Scenario: A name that joins the mesh replaces nothing
    Given 1 passes run on "novox"
    When module "searxng" is assigned to "g14"
    And 1 passes run on "novox"
    Then the roster of "novox" contains "searxng.zurag.be"
    And 0 resources were replaced on "novox" in the last pass
    And container "proxy" on "novox" was not replaced
    And the apply report of "novox" reads "applied 3 resource(s)"

  Scenario: A name that leaves the mesh replaces nothing
    Given module "searxng" is assigned to "g14"
    And 1 passes run on "novox"
    When module "searxng" is released from "g14"
    And 1 passes run on "novox"
    Then the roster of "novox" does not contain "searxng.zurag.be"
    And the roster of "novox" contains "proxy.novox.be"
    And 0 resources were replaced on "novox" in the last pass
    And container "ca" on "novox" was not replaced
    And status of "novox" is converged
