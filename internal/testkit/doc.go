// Package testkit holds the helpers that tests across sigops share: polling until a
// condition holds, a log buffer safe for concurrent writers, a settable clock, decimal
// literals and checks, a JWT forger, and a round-robin transport that spreads one client's
// requests over several replicas. Each exists once here so that every package's tests wait, fake
// time and build fixtures the same way.
//
// It is an internal, non-test package only because Go cannot share _test.go files between
// packages; production code never imports it.
package testkit
