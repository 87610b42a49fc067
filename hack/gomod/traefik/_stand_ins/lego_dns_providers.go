// Stands in for zz_gen_dns_providers.go of github.com/go-acme/lego/v5/providers/dns in the bed's
// build of Traefik (hack/traefik-build-module.sh puts it in place of that file). That file imports every DNS provider lego has,
// and several of their SDKs are not served by the module proxy. The bed runs no ACME resolver; one
// configured with a DNS challenge fails with this error.

package dns

import (
	"fmt"

	"github.com/go-acme/lego/v5/challenge"
)

// NewDNSChallengeProviderByName refuses: no DNS-01 provider is in this build.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("DNS challenge provider %q is not in modelgate's test-bed build of Traefik", name)
}
