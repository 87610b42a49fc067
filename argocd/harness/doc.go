// Package harness runs modelgate's Argo CD customizations the way Argo CD runs them, so that
// `go test` fails on what would fail in Argo CD:
//
//   - lua.go runs argocd/health.lua in a gopher-lua state set up like Argo CD's util/lua VM sets
//     one up for a health check from argocd-cm: no standard libraries but base, table and package.
//   - ignore.go applies an Application's ignoreDifferences jqPathExpressions the way Argo CD's
//     util/argo/normalizers ignore normalizer does: gojq runs del(<expression>) on the object.
//   - sync.go computes what a sync with RespectIgnoreDifferences=true applies, as Argo CD's
//     controller (normalizeTargetResources) does: live values of ignored fields copied into the target.
//
// The tests feed them the fixtures in argocd/testdata.
package harness
