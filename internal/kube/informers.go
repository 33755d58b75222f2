package kube

import (
	"slices"

	"k8s.io/client-go/tools/cache"
)

// informerSet is one resource's informers, one per job namespace, used as
// one: handlers and indexers go to each, lookups gather from all.
type informerSet []cache.SharedIndexInformer

func (s informerSet) addIndexers(ix cache.Indexers) error {
	for _, inf := range s {
		if err := inf.AddIndexers(ix); err != nil {
			return err
		}
	}
	return nil
}

func (s informerSet) addEventHandler(h cache.ResourceEventHandler) error {
	for _, inf := range s {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}

func (s informerSet) hasSynced() bool {
	return !slices.ContainsFunc(s, func(inf cache.SharedIndexInformer) bool { return !inf.HasSynced() })
}

// byJob returns the cached objects of a Voda job, from every namespace.
func (s informerSet) byJob(job string) []any {
	var out []any
	for _, inf := range s {
		objs, err := inf.GetIndexer().ByIndex(indexJob, job)
		if err == nil {
			out = append(out, objs...)
		}
	}
	return out
}
