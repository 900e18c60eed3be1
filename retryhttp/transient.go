package retryhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Transient is the default classifier: it reports whether an attempt's
// outcome is a failure that the same request may not meet again.
//
//	outcome                                                  retried
//	408, 429, 500, 502, 503, 504                             yes
//	any other status (2xx, 3xx, other 4xx, 501, 505, ...)    no: the response is the answer
//	a timeout (net.Error's Timeout, retry.WithAttemptTimeout) yes
//	a connection refused, reset or aborted, a broken pipe,
//	  the connection closed before the response (EOF)        yes
//	another error of the network (*net.OpError)              yes
//	a DNS error: not found                                   no; any other DNS error: yes
//	a TLS certificate not trusted or not for the host,
//	  a server that does not speak TLS                       no
//	context.Canceled (the caller's), any other error
//	  (a redirect refused, an unsupported scheme, a bad
//	  header, a body that could not be rewound)              no
//
// The request's own context is looked at before the classifier: once it is
// done, nothing is retried.
func Transient(resp *http.Response, err error) bool {
	if err == nil {
		return resp != nil && retriedStatus(resp.StatusCode)
	}
	var (
		cert      *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		dns       *net.DNSError
		netErr    net.Error
		op        *net.OpError
	)
	switch {
	case errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &cert), errors.As(err, &authority), errors.As(err, &hostname),
		errors.As(err, &invalid), errors.As(err, &record):
		return false
	case errors.As(err, &dns):
		return !dns.IsNotFound
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	return errors.As(err, &op)
}

// retriedStatus reports whether Transient retries a response of status
// code: 408, 429, 500, 502, 503 and 504.
func retriedStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
