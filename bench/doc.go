// Package bench holds the benchmarks that measure retrypolicy beside other
// code.
//
// They set the delay after the n-th failure against a peer backoff library,
// and a controller tick over a million jobs beside a hand loop. It is a module of its own so that
// the library keeps no dependency on what it is compared with.
package bench
