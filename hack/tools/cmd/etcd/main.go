// Command etcd is etcd's server, built from its release module because the
// etcd repository's root module cannot be installed with `go install`.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
