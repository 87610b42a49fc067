// Package ext is the extension point Traefik embeds in dynamic.HTTPConfiguration and dynamic.Router.
package ext

// HTTP adds nothing to Traefik's HTTP configuration.
type HTTP struct{}

// Router adds nothing to Traefik's routers.
type Router struct{}
