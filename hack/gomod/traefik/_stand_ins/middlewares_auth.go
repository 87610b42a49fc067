// Stands in for basic_auth.go of github.com/traefik/traefik/v3/pkg/middlewares/auth in the bed's
// build (hack/traefik-build-module.sh puts it in place of that file and removes digest_auth.go). Both files need Traefik's fork
// of github.com/abbot/go-http-auth, which the module proxy does not serve. The bed routes Gateway API
// traffic and configures no authentication middleware; one that is configured fails with this error.

package auth

import (
	"context"
	"fmt"
	"net/http"

	"github.com/traefik/traefik/v3/pkg/config/dynamic"
)

// NewBasic refuses: basic authentication is not in this build.
func NewBasic(_ context.Context, _ http.Handler, _ dynamic.BasicAuth, name string) (http.Handler, error) {
	return nil, notBuilt(name, "basicAuth")
}

// NewDigest refuses: digest authentication is not in this build.
func NewDigest(_ context.Context, _ http.Handler, _ dynamic.DigestAuth, name string) (http.Handler, error) {
	return nil, notBuilt(name, "digestAuth")
}

func notBuilt(name, kind string) error {
	return fmt.Errorf("middleware %s: %s is not in modelgate's test-bed build of Traefik", name, kind)
}
