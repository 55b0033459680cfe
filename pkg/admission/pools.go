package admission

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	quotav1alpha1 "github.com/koord-queue/koord-queue/apis/quota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/pool"
	"github.com/koord-queue/koord-queue/pkg/quota"
)

// Where no koord-manager writes a quota tree root's total-resource
// annotation, koord-queue computes the tree's capacity itself (Options.
// ComputeTreeCapacity): the schedulable part of what the nodes of its
// ElasticQuotaProfile's pool offer (pool.Of), kept in memory, never written.
// The profiles are kept whenever the cluster serves them, for the node
// pools the Placer counts (topology.go).

// pools is what the Cache keeps to compute the trees' capacities.
type pools struct {
	// profiles by namespace/name.
	profiles map[string]*quotav1alpha1.ElasticQuotaProfile
	// nodes are slim copies of every node (poolNode), by name.
	nodes map[string]corev1.Node
	// capacities are what each profile's pool offers now (pool.Of), by
	// the profile's namespace/name.
	capacities map[string]poolCapacity
	// used are the capacities the tree roots were last given (treeSpec),
	// by the root quota's namespace/name.
	used map[string]treeTotal
}

// poolCapacity is what a profile's nodes offer now, or why it is unknown.
type poolCapacity struct {
	total corev1.ResourceList
	err   error
}

// treeTotal is a tree root's computed capacity, or why there is none.
type treeTotal struct {
	total corev1.ResourceList
	err   error
	// profile is the name of the ElasticQuotaProfile of the root
	// (pool.ProfileOf): the tree's pool.
	profile string
}

func (t treeTotal) equal(o treeTotal) bool {
	return equality.Semantic.DeepEqual(t.total, o.total) && errString(t.err) == errString(o.err) && t.profile == o.profile
}

func newPools() pools {
	return pools{
		profiles:   map[string]*quotav1alpha1.ElasticQuotaProfile{},
		nodes:      map[string]corev1.Node{},
		capacities: map[string]poolCapacity{},
		used:       map[string]treeTotal{},
	}
}

// poolNode keeps of a node only what pool.Of reads: its labels, allocatable,
// whether it is being deleted, cordoned and Ready. Heartbeats leave it as it
// was.
func poolNode(n *corev1.Node) corev1.Node {
	slim := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, DeletionTimestamp: n.DeletionTimestamp},
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
		Status:     corev1.NodeStatus{Allocatable: n.Status.Allocatable},
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			slim.Status.Conditions = []corev1.NodeCondition{{Type: cond.Type, Status: cond.Status}}
			break
		}
	}
	return slim
}

// treeCapacities computes the quota trees' capacities from profiles and
// nodes.
type treeCapacities struct {
	mu *sync.Mutex // the Cache's
	// quotaObjects are the Cache's quotas in use, whose roots refreshTrees
	// has the user use again when their capacity changed.
	quotaObjects map[string]*elasticquotav1alpha1.ElasticQuota
	user         quotaUser
	// computeTrees: quota trees' capacities come from ElasticQuotaProfiles
	// and nodes, not from their roots' total-resource annotation.
	computeTrees bool
	pools        pools
	// placer is told of the profiles' changes: they are its node pools,
	// and may name its Topologies (the topologies part).
	placer profileWatcher
}

// profileWatcher is told of a profile's change from old to p (nil: none),
// with the Cache's lock held.
type profileWatcher interface {
	profileChanged(old, p *quotav1alpha1.ElasticQuotaProfile)
}

// UpsertElasticQuotaProfile records a profile, recomputes the trees'
// capacities (only with ComputeTreeCapacity) and tells the Placer, whose
// node pools and Topologies the profiles are. The profiles are kept
// whenever the cluster has their CRD.
func (c *treeCapacities) UpsertElasticQuotaProfile(p *quotav1alpha1.ElasticQuotaProfile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	old := c.pools.profiles[key]
	c.pools.profiles[key] = p
	if old == nil || !equality.Semantic.DeepEqual(old.Spec, p.Spec) {
		c.refreshTrees()
	}
	c.placer.profileChanged(old, p)
}

// DeleteElasticQuotaProfile forgets a profile: its tree's root falls back
// to its annotation (none: the tree admits nothing), and the Placer is
// told.
func (c *treeCapacities) DeleteElasticQuotaProfile(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := namespace + "/" + name
	old := c.pools.profiles[key]
	if old == nil {
		return
	}
	delete(c.pools.profiles, key)
	c.refreshTrees()
	c.placer.profileChanged(old, nil)
}

// upsertPoolNode records a node's slim copy, with c.mu held, when
// koord-queue computes the trees' capacities, and reports whether it
// changed.
func (c *treeCapacities) upsertPoolNode(n *corev1.Node) bool {
	if !c.computeTrees {
		return false
	}
	slim := poolNode(n)
	if old, ok := c.pools.nodes[n.Name]; ok && equality.Semantic.DeepEqual(old, slim) {
		return false
	}
	c.pools.nodes[n.Name] = slim
	return true
}

// deletePoolNode forgets a node, with c.mu held, and computes the trees'
// capacities again if it was kept.
func (c *treeCapacities) deletePoolNode(name string) {
	if _, ok := c.pools.nodes[name]; ok {
		delete(c.pools.nodes, name)
		c.refreshTrees()
	}
}

// refreshTrees computes every profile's pool capacity, with c.mu held, and
// uses again the root quotas whose capacity, or profile, changed.
func (c *treeCapacities) refreshTrees() {
	if !c.computeTrees {
		return
	}
	nodes := make([]corev1.Node, 0, len(c.pools.nodes))
	for _, name := range slices.Sorted(maps.Keys(c.pools.nodes)) {
		nodes = append(nodes, c.pools.nodes[name])
	}
	capacities := make(map[string]poolCapacity, len(c.pools.profiles))
	roots := map[string]struct{}{}
	for key, p := range c.pools.profiles {
		capacity, err := pool.Of(p, nodes)
		if err != nil {
			capacities[key] = poolCapacity{err: err}
		} else {
			capacities[key] = poolCapacity{total: capacity.Schedulable()}
		}
		roots[p.Namespace+"/"+p.Spec.QuotaName] = struct{}{}
	}
	c.pools.capacities = capacities
	for root := range c.pools.used {
		roots[root] = struct{}{}
	}
	for _, root := range slices.Sorted(maps.Keys(roots)) {
		namespace, name, _ := strings.Cut(root, "/")
		eq := c.quotaObjects[name]
		if eq == nil || eq.Namespace != namespace {
			delete(c.pools.used, root) // given again when it is used
			continue
		}
		before, had := c.pools.used[root]
		after, has := c.treeTotalOf(namespace, name, eq.Labels[elasticquotav1alpha1.LabelQuotaProfile])
		if had == has && before.equal(after) {
			continue
		}
		c.user.useQuota(eq)
	}
}

// treeTotalOf is the capacity of the tree whose root is the quota name in
// namespace, labelled with profile labelled, with c.mu held: that of its
// ElasticQuotaProfile (pool.ProfileOf); ok is false when none names it.
func (c *treeCapacities) treeTotalOf(namespace, name, labelled string) (t treeTotal, ok bool) {
	p, ignored := pool.ProfileOf(namespace, name, labelled, slices.Collect(maps.Values(c.pools.profiles)))
	if p == nil {
		return treeTotal{}, false
	}
	capacity := c.pools.capacities[p.Namespace+"/"+p.Name]
	t = treeTotal{total: capacity.total, err: capacity.err, profile: p.Name}
	for _, other := range ignored {
		t.err = joinErr(t.err, fmt.Errorf("ElasticQuotaProfile %s/%s also names quota %q: ignored", other.Namespace, other.Name, name))
	}
	return t, true
}

// treeSpec sets a tree root's capacity from its profile, with c.mu held,
// when koord-queue computes them and a profile names the root; err is
// SpecFromElasticQuota's, whose complaint about the annotation no longer
// matters then.
func (c *treeCapacities) treeSpec(namespace string, spec quota.Spec, err error) (quota.Spec, error) {
	if !c.computeTrees {
		return spec, err
	}
	key := namespace + "/" + spec.Name
	t, ok := c.treeTotalOf(namespace, spec.Name, spec.Pool) // spec.Pool: the root's profile label
	if !ok {
		delete(c.pools.used, key)
		if spec.IsTreeRoot && spec.TreeID != "" && spec.TreeTotal == nil {
			err = joinErr(err, fmt.Errorf("quota %q: no ElasticQuotaProfile in namespace %q names it (spec.quotaName)", spec.Name, namespace))
		}
		return spec, err
	}
	c.pools.used[key] = t
	if !spec.IsTreeRoot || spec.TreeID == "" {
		return spec, joinErr(err, fmt.Errorf("quota %q: named by an ElasticQuotaProfile but not a quota tree's root (labels %s and %s=\"true\"): its capacity is not used",
			spec.Name, elasticquotav1alpha1.LabelQuotaTreeID, elasticquotav1alpha1.LabelQuotaIsRoot))
	}
	spec.TreeTotal = t.total // nil when the profile is invalid: the tree admits nothing
	spec.Pool = t.profile
	return spec, t.err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func joinErr(a, b error) error {
	if a == nil {
		return b
	}
	return fmt.Errorf("%w; %w", a, b)
}
