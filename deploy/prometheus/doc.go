// Package prometheus holds meshplane's Prometheus alerting rules
// (alerts.yml: a churn loop, a failed compose, a failing node, a silent
// node, holds waiting on take for a day, an agent's outbox that grows) and
// their promtool unit tests (alerts_test.yml). It has no Go code of its
// own: its test runs `promtool check rules` and `promtool test rules`
// (scripts/ensure-promtool.sh installs Debian's prometheus package for
// promtool; under CI=true a missing promtool fails the test), checks that
// every metric the rules name is one package metrics exports, and runs
// `promtool check metrics` on a scrape of the controller and an agent.
package prometheus
