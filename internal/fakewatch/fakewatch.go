// Package fakewatch waits, in tests, until an informer has started its watch on client-go's fake
// clients. A fake client's watch does not replay what changed between the informer's list and its
// watch, so a test that changes an object before the watch is there loses that change.
package fakewatch

import (
	"slices"
	"testing"
	"time"

	"github.com/foresight-router/foresight/internal/eventually"
	k8stesting "k8s.io/client-go/testing"
)

// Actions is what the fake clients record (fake.Clientset, dynamic fake.FakeDynamicClient).
type Actions interface{ Actions() []k8stesting.Action }

// Wait waits up to within until c has been asked to watch resource (e.g. "pods"), and fails t
// when it has not.
func Wait(t testing.TB, c Actions, resource string, within time.Duration) {
	t.Helper()
	eventually.Wait(t, within, "a watch of "+resource, func() bool {
		return slices.ContainsFunc(c.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == resource
		})
	})
}
