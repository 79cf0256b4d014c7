Feature: Projections are pure functions of the event stream
  Any projection can be rebuilt from position 0 and equals what was followed live.

  Scenario: A rebuild equals the live projections
    Given a mesh with nodes "novox, g14"
    And node "novox" is adopted
    And module "route-proxy" with containers "proxy, ca, acme"
    And module "route-proxy" container "ca" mounts "/var/lib/route-proxy/ca"
    And directory "/var/lib/route-proxy/ca" exists on node "novox"
    And module "route-proxy" is assigned to "novox"
    And module "searxng" with containers "searxng"
    And module "searxng" routes name "searxng.zurag.be"
    And module "searxng" is assigned to "g14"
    And 2 passes run on "novox"
    And the store fails reads of node "g14" on every other pass
    And 3 passes run on "novox"
    When the projections are rebuilt from the event stream
    Then the projections equal those before the rebuild
    And the roster of "novox" contains "searxng.zurag.be"
    And status of "novox" shows "route-proxy" waiting on take
