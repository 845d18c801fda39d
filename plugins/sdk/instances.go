package sdk

import (
	"fmt"
	"sync"
)

// instances holds the configured instances of a plugin process. A single-instance process (the
// Serve… helpers) has only the default instance, named ""; a multi-instance one (ServeInstances)
// makes an implementation per name the host configures, each with its own parameters and state.
type instances struct {
	newImpl func() Plugin // nil: single instance
	def     Plugin        // the default instance

	mu    sync.RWMutex
	named map[string]Plugin
}

func singleInstance(impl Plugin) *instances { return &instances{def: impl} }

func multiInstance(newImpl func() Plugin) *instances {
	return &instances{newImpl: newImpl, def: newImpl(), named: map[string]Plugin{}}
}

// multi reports whether the process hosts several instances.
func (r *instances) multi() bool { return r.newImpl != nil }

// get returns the instance called name ("" is the default).
func (r *instances) get(name string) (Plugin, error) {
	if name == "" {
		return r.def, nil
	}
	r.mu.RLock()
	impl, ok := r.named[name]
	r.mu.RUnlock()
	if !ok {
		if !r.multi() {
			return nil, &StatusError{Code: CodeInvalidArgument, Message: fmt.Sprintf("instance %q: this plugin serves a single instance", name)}
		}
		return nil, &StatusError{Code: CodeInvalidArgument, Message: fmt.Sprintf("instance %q is not configured", name)}
	}
	return impl, nil
}

// configure merges params over the defaults of the instance called name, making it when new; a
// new instance that rejects its parameters is not kept.
func (r *instances) configure(name string, params []byte) error {
	if name == "" {
		return r.def.Configure(params)
	}
	if !r.multi() {
		_, err := r.get(name)
		return err
	}
	r.mu.RLock()
	impl, ok := r.named[name]
	r.mu.RUnlock()
	if ok {
		return impl.Configure(params)
	}
	impl = r.newImpl()
	if err := impl.Configure(params); err != nil {
		return err
	}
	r.mu.Lock()
	if other, ok := r.named[name]; ok { // configured concurrently under the same name
		r.mu.Unlock()
		return other.Configure(params)
	}
	r.named[name] = impl
	r.mu.Unlock()
	return nil
}

// drop forgets the instance called name; the default instance stays.
func (r *instances) drop(name string) {
	r.mu.Lock()
	delete(r.named, name)
	r.mu.Unlock()
}

// stageOf returns the instance called name as the stage interface T.
func stageOf[T any](r *instances, name string) (T, error) {
	impl, err := r.get(name)
	if err != nil {
		var zero T
		return zero, err
	}
	t, ok := impl.(T)
	if !ok {
		var zero T
		return zero, &StatusError{Code: CodeError, Message: fmt.Sprintf("plugin %q does not serve this stage", impl.Type())}
	}
	return t, nil
}
