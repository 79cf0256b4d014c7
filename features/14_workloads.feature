Feature: What the engine runs, not only what the agent did (issue 34)
  A container that exits at every start, fails its health check or is killed for lack of memory is
  said by its node's agent as a transition, and no surface calls the node converged meanwhile; a crash
  loop is one episode, and why names its exit code.

  Background:
    Given a mesh with nodes "novox"
    And module "forge" with containers "web, db"
    And module "forge" is assigned to "novox"
    And 1 passes run on "novox"

  Scenario: A container that exits at every start is crash-looping, then runs again
    When container "web" on "novox" exits with code 1 at every start
    And 2 minutes pass
    Then status of "novox" shows "web" crash-looping
    And status of "novox" shows "db" running
    And status of "novox" is not converged
    And the health of "novox" is "crash-looping"
    And why "web" on "novox" names "exit code 1"
    And why "web" on "novox" names "web: exited with code 1"
    When 10 minutes pass
    Then status of "novox" shows "web" crash-looping
    When container "web" on "novox" runs again
    And 1 minutes pass
    Then status of "novox" shows "web" running
    And status of "novox" is converged

  Scenario: An unhealthy container keeps its node from converged until it is healthy again
    When container "db" on "novox" becomes unhealthy
    And 1 minutes pass
    Then status of "novox" shows "db" unhealthy
    And the health of "novox" is "unhealthy"
    When container "db" on "novox" becomes healthy
    And 1 minutes pass
    Then status of "novox" shows "db" running
    And status of "novox" is converged

  Scenario: A container killed for lack of memory is started again by its agent
    When container "web" on "novox" is killed for lack of memory
    And 1 minutes pass
    Then status of "novox" shows "web" starting
    And the health of "novox" is "starting"
    When 1 minutes pass
    Then status of "novox" shows "web" running
    And status of "novox" is converged
