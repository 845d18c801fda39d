package kube

import (
	"errors"
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Clients are the API clients a Watcher reads through. They are injected so that tests pass
// k8s.io/client-go/kubernetes/fake and k8s.io/client-go/dynamic/fake; NewClients builds the real
// ones.
type Clients struct {
	// Core lists and watches pods; with Config.InferencePool its discovery says whether the
	// cluster serves ObjectiveResource and ModelRewriteResource.
	Core kubernetes.Interface
	// Dynamic lists and watches the InferencePool (PoolResource), and the InferenceObjectives and
	// InferenceModelRewrites the cluster serves, as unstructured data; needed only with
	// Config.InferencePool.
	Dynamic dynamic.Interface
}

// UserAgent identifies the router to the API server (its audit log, its priority and fairness).
const UserAgent = "foresight-router"

// NewClients connects to the cluster the router runs in (rest.InClusterConfig: the pod's service
// account), or, when kubeconfig names a file, to that file's current context.
func NewClients(kubeconfig string) (Clients, error) {
	var (
		cfg *rest.Config
		err error
	)
	if kubeconfig != "" {
		if cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
			return Clients{}, fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
		}
	} else if cfg, err = rest.InClusterConfig(); err != nil {
		if errors.Is(err, rest.ErrNotInCluster) {
			return Clients{}, errors.New("not running in a Kubernetes pod ($KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT are unset): " +
				"run the router in the cluster, or name a kubeconfig file in endpoints.kubernetes.kubeconfig")
		}
		return Clients{}, fmt.Errorf("reading the in-cluster configuration: %w", err)
	}
	cfg = rest.AddUserAgent(cfg, UserAgent)
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("a client for %s: %w", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("a dynamic client for %s: %w", cfg.Host, err)
	}
	return Clients{Core: core, Dynamic: dyn}, nil
}
