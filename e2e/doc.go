// Package e2e holds the tests that drive the command's page in a headless
// browser.
//
// It is a module of its own, so that the library's go.mod gains nothing
// from the browser driver.
package e2e
