// Package bench holds the benchmarks that measure retrypolicy beside other
// code: the delay after the n-th failure against a peer backoff library, and
// a controller tick over a million jobs. It is a module of its own so that
// the library keeps no dependency on what it is compared with.
package bench
