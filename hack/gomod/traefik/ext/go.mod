// Traefik's dynamic-configuration extension point, which its go.mod replaces with a directory of its
// own tree that no module download carries. Traefik embeds these types in its HTTP configuration and
// routers; the open-source build extends nothing, so they are empty here.
module github.com/traefik/traefik/dynamic/ext

go 1.24.0
