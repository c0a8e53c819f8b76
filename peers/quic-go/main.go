// quic-go-peer: a small HTTP/3 file server and download client on quic-go for
// `satquic matrix` (peers/adapters.toml), built by scripts/install-peers.sh.
//
//	quic-go-peer server -listen 127.0.0.1:4433 -cert cert.pem -key key.pem -www DIR
//	quic-go-peer client -download DIR https://127.0.0.1:4433/file
//
// SSLKEYLOGFILE names a key log file; QLOGDIR a directory for qlogs (quic-go's own
// variable). The client does not verify certificates: the matrix runs on loopback with a
// fresh self-signed one. It exits 0 once the whole response is saved.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"syscall"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
)

func keyLog() io.Writer {
	name := os.Getenv("SSLKEYLOGFILE")
	if name == "" {
		return nil
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fail("key log: %v", err)
	}
	return f
}

func quicConfig() *quic.Config {
	c := &quic.Config{}
	if os.Getenv("QLOGDIR") != "" {
		c.Tracer = qlog.DefaultConnectionTracer
	}
	return c
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "quic-go-peer: "+format+"\n", args...)
	os.Exit(1)
}

func server(args []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:4433", "address to listen on")
	cert := fs.String("cert", "", "PEM certificate")
	key := fs.String("key", "", "PEM private key")
	www := fs.String("www", ".", "directory to serve")
	fs.Parse(args)
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		fail("certificate: %v", err)
	}
	s := &http3.Server{
		Addr:       *listen,
		Handler:    http.FileServer(http.Dir(*www)),
		TLSConfig:  http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair}, KeyLogWriter: keyLog()}),
		QUICConfig: quicConfig(),
	}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		s.Close()
		os.Exit(0)
	}()
	if err := s.ListenAndServe(); err != nil {
		fail("server: %v", err)
	}
}

func client(args []string) {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	download := fs.String("download", ".", "directory to save the file in")
	fs.Parse(args)
	if fs.NArg() != 1 {
		fail("client: give one URL")
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil {
		fail("URL: %v", err)
	}
	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, KeyLogWriter: keyLog()},
		QUICConfig:      quicConfig(),
	}
	defer tr.Close()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		fail("GET: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fail("GET: status %d", resp.StatusCode)
	}
	name := path.Base(u.Path)
	f, err := os.Create(filepath.Join(*download, name))
	if err != nil {
		fail("%v", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		fail("download: %v", err)
	}
	if err := f.Close(); err != nil {
		fail("%v", err)
	}
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: quic-go-peer server|client ...")
	}
	switch os.Args[1] {
	case "server":
		server(os.Args[2:])
	case "client":
		client(os.Args[2:])
	default:
		fail("usage: quic-go-peer server|client ...")
	}
}
