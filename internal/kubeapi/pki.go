package kubeapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// AdminUser is the user the Server's Config authenticates as, by a client certificate; its group
// system:masters passes every RBAC check.
const AdminUser = "foresight-test-admin"

// pki is what one server's TLS and tokens need, each in PEM: a CA, the serving certificate it
// signs for 127.0.0.1 and localhost, the admin's client certificate it signs, and the key that
// signs service account tokens.
type pki struct {
	caCert                []byte
	serveCert, serveKey   []byte
	clientCert, clientKey []byte
	saKey                 []byte
}

// newPKI makes fresh keys and certificates, valid for a day.
func newPKI() (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "foresight-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, err
	}
	p := &pki{caCert: pemBlock("CERTIFICATE", caDER)}
	leaf := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP, dns []string) (cert, key []byte, err error) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      subject,
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
			DNSNames:     dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		kb, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return nil, nil, err
		}
		return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", kb), nil
	}
	if p.serveCert, p.serveKey, err = leaf(2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		[]net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}); err != nil {
		return nil, err
	}
	// The API server takes a client certificate's CN as the user and its O as the groups.
	if p.clientCert, p.clientKey, err = leaf(3, pkix.Name{CommonName: AdminUser, Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	kb, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	p.saKey = pemBlock("EC PRIVATE KEY", kb)
	return p, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// pkiFiles are the paths the API server's flags name.
type pkiFiles struct {
	caCert, serveCert, serveKey, saKey string
}

// write puts the files the API server reads into dir, readable by the owner only.
func (p *pki) write(dir string) (pkiFiles, error) {
	f := pkiFiles{
		caCert:    filepath.Join(dir, "ca.crt"),
		serveCert: filepath.Join(dir, "apiserver.crt"),
		serveKey:  filepath.Join(dir, "apiserver.key"),
		saKey:     filepath.Join(dir, "service-account.key"),
	}
	for path, data := range map[string][]byte{f.caCert: p.caCert, f.serveCert: p.serveCert, f.serveKey: p.serveKey, f.saKey: p.saKey} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return f, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return f, nil
}
