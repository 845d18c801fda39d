// Package deploy holds what runs Foresight on Kubernetes: the Helm chart in helm/foresight, and in
// manifests/ the same objects as plain YAML for kubectl, generated from the chart's defaults (make
// manifests). The image they run is the repository's Dockerfile.
//
// The package has no code of its own; its tests are the chart's checks. They lint and render the
// chart with Helm's Go packages in process (helm.sh/helm/v3, as helm lint --strict and helm
// template do; the version go.mod pins), decode every rendered object strictly into its API type
// (k8s.io/api through client-go's scheme; the InferencePool and HTTPRoute into structs written from
// their published schemas), and check the objects against each other and against the image: the
// Service selects the Deployment's pods, the probes and the InferencePool name ports that exist,
// the RoleBinding grants the Role to the service account the pods run as, and the ConfigMap holds a
// config that `foresight check` accepts with the plugin binaries where the image puts them. They
// fail when deploy/manifests is stale. apiserver_test.go then gives every value set's objects to a
// real kube-apiserver with etcd (internal/kubeapi): a server-side dry run with strict field
// validation, and for one set a real install whose service account the router's watcher runs as.
package deploy
