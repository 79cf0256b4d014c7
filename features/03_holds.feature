Feature: A hold is a line in every report (docs/design.md rule 3, seed 002)
  On an adopted node, a module's data found on disk is not the mesh's to touch until the
  module is taken. Every found directory of a module assigned but not taken is held,
  whether or not it already matches, and so is every file under one and every container
  that mounts one: none of them is touched or counted as applied. The report says what
  it held and why; status shows the module waiting on take, never converged.

  Background:
    Given a mesh with nodes "novox"
    And node "novox" is adopted
    And module "route-proxy" with containers "proxy, ca, acme"
    And module "route-proxy" container "ca" mounts "/var/lib/route-proxy/ca"
    And directory "/var/lib/route-proxy/ca" exists on node "novox"
    And module "route-proxy" is assigned to "novox"

  Scenario: Found data is held with the container that mounts it, and the report says so (the worked count of docs/scenario-steps.md)
    When the mesh is pushed to "novox"
    And node "novox" applies its latest declaration
    Then the apply report of "novox" reads "applied 2 resource(s), 2 held for untaken modules (route-proxy: 2)"
    And the apply report of "novox" holds "/var/lib/route-proxy/ca" because "found on this adopted node; not touched until route-proxy is taken"
    And the apply report of "novox" holds "ca" because "would mount /var/lib/route-proxy/ca, found on this adopted node; not run until route-proxy is taken"
    And status of "novox" shows "route-proxy" waiting on take
    And status of "novox" is not converged

  Scenario: A file under a found directory is held, and not written
    Given module "route-proxy" writes file "/var/lib/route-proxy/ca/ca.json" with "{}"
    When 1 passes run on "novox"
    Then the apply report of "novox" reads "applied 2 resource(s), 3 held for untaken modules (route-proxy: 3)"
    And the apply report of "novox" holds "/var/lib/route-proxy/ca/ca.json" because "under /var/lib/route-proxy/ca, found on this adopted node; not written until route-proxy is taken"

  Scenario: Quiet passes are one report each, and each still says what it holds
    When 3 passes run on "novox"
    Then the event stream has 3 "apply.reported" events for "novox"
    And the event stream has 1 "declaration.composed" events for "novox"
    And the event stream has 1 "declaration.pushed" events for "novox"
    And the apply report of "novox" reads "applied 2 resource(s), 2 held for untaken modules (route-proxy: 2)"
    And the apply report of "novox" holds "ca" because "would mount /var/lib/route-proxy/ca, found on this adopted node; not run until route-proxy is taken"
    And status of "novox" shows "route-proxy" waiting on take

  Scenario: Taking the module releases the hold
    Given 1 passes run on "novox"
    When module "route-proxy" is taken on "novox"
    And 1 passes run on "novox"
    Then the apply report of "novox" reads "applied 4 resource(s)"
    And status of "novox" is converged

  Scenario: Holds are counted per module, largest first
    Given module "photos" with containers "app, db"
    And module "photos" container "app" mounts "/srv/photos"
    And module "photos" container "db" mounts "/srv/photos"
    And directory "/srv/photos" exists on node "novox"
    And module "photos" is assigned to "novox"
    When 1 passes run on "novox"
    Then the apply report of "novox" reads "applied 2 resource(s), 5 held for untaken modules (photos: 3, route-proxy: 2)"
    And status of "novox" shows "photos" waiting on take
    And status of "novox" shows "route-proxy" waiting on take

  Scenario: Data that is not found is the mesh's to make, held or not
    Given module "mail" with containers "smtp"
    And module "mail" container "smtp" mounts "/var/lib/mail"
    And module "mail" is assigned to "novox"
    When 1 passes run on "novox"
    Then the apply report of "novox" reads "applied 4 resource(s), 2 held for untaken modules (route-proxy: 2)"

  Scenario: A rolled-back module's leftovers are found again on re-assign (the seed's cutover)
    Given module "mail" with containers "smtp"
    And module "mail" container "smtp" mounts "/var/lib/mail"
    And module "mail" is assigned to "novox"
    And module "mail" is taken on "novox"
    And 1 passes run on "novox"
    And module "mail" is released from "novox"
    And 1 passes run on "novox"
    When module "mail" is assigned to "novox"
    And 1 passes run on "novox"
    Then the apply report of "novox" holds "smtp" because "would mount /var/lib/mail, found on this adopted node; not run until mail is taken"
    And status of "novox" shows "mail" waiting on take
    And status of "novox" shows "route-proxy" waiting on take
