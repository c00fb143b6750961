// Command go-extender is the baseline of the benchmark: a kube-scheduler extender written
// the way the classic samples do it (net/http, encoding/json, typed structs) with the
// benchmark policy hard-coded. It serves both modes: with nodeCacheCapable: false the
// request carries the nodes; with true it carries names, looked up in the node map loaded
// at start from -snapshot, as an extender keeps one from its informer. Either way the CPU
// requested on each node comes from a pod cache summed once at start from the snapshot's
// Pods, as an informer-fed extender keeps it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

type extender struct {
	nodes     map[string]*Node // the node cache of NodeNames mode
	requested podCache         // millicores requested on each node by its active pods
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8888", "address to serve on")
	snapshot := flag.String("snapshot", "", "a v1 List of Nodes (and Pods) for NodeNames mode")
	flag.Parse()

	e := &extender{nodes: map[string]*Node{}, requested: podCache{}}
	if *snapshot != "" {
		nodes, requested, err := loadSnapshot(*snapshot)
		if err != nil {
			log.Fatalf("loading %s: %v", *snapshot, err)
		}
		e.nodes, e.requested = nodes, requested
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/filter", e.filter)
	mux.HandleFunc("/prioritize", e.prioritize)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	server := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("serving on %s with %d cached nodes", *listen, len(e.nodes))
	log.Fatal(server.ListenAndServe())
}

// loadSnapshot reads the Nodes of a List such as `kubectl get nodes,pods -o json` prints,
// and sums the CPU its Pods request on each node.
func loadSnapshot(path string) (map[string]*Node, podCache, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, nil, err
	}
	nodes := map[string]*Node{}
	requested := podCache{}
	for _, raw := range list.Items {
		var meta TypeMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, nil, err
		}
		switch meta.Kind {
		case "Node":
			node := &Node{}
			if err := json.Unmarshal(raw, node); err != nil {
				return nil, nil, err
			}
			node.TypeMeta = TypeMeta{} // the scheduler's nodes carry no kind either
			nodes[node.Metadata.Name] = node
		case "Pod":
			pod := &Pod{}
			if err := json.Unmarshal(raw, pod); err != nil {
				return nil, nil, err
			}
			requested.add(pod)
		}
	}
	return nodes, requested, nil
}

func decodeArgs(w http.ResponseWriter, r *http.Request) (*ExtenderArgs, bool) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return nil, false
	}
	var args ExtenderArgs
	if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return &args, true
}

func (e *extender) filter(w http.ResponseWriter, r *http.Request) {
	args, ok := decodeArgs(w, r)
	if !ok {
		return
	}
	pod := factsOf(args.Pod)
	req := e.requested
	result := ExtenderFilterResult{
		FailedNodes:                map[string]string{},
		FailedAndUnresolvableNodes: map[string]string{},
	}
	if args.NodeNames != nil {
		names := make([]string, 0, len(*args.NodeNames))
		for _, name := range *args.NodeNames {
			node, known := e.nodes[name]
			if !known {
				result.FailedNodes[name] = "node is not in the extender's cache"
				continue
			}
			if failed := failures(pod, node, req[name]); failed != nil {
				result.FailedNodes[name] = strings.Join(failed, "; ")
				continue
			}
			names = append(names, name)
		}
		result.NodeNames = &names
	} else {
		list := &NodeList{Items: []Node{}}
		if args.Nodes != nil {
			for i := range args.Nodes.Items {
				node := &args.Nodes.Items[i]
				if failed := failures(pod, node, req[node.Metadata.Name]); failed != nil {
					result.FailedNodes[node.Metadata.Name] = strings.Join(failed, "; ")
					continue
				}
				list.Items = append(list.Items, *node)
			}
		}
		result.Nodes = list
	}
	writeJSON(w, result)
}

func (e *extender) prioritize(w http.ResponseWriter, r *http.Request) {
	args, ok := decodeArgs(w, r)
	if !ok {
		return
	}
	pod := factsOf(args.Pod)
	req := e.requested
	scores := []HostPriority{}
	if args.NodeNames != nil {
		for _, name := range *args.NodeNames {
			var s int64
			if node, known := e.nodes[name]; known {
				s = score(pod, node, req[name])
			}
			scores = append(scores, HostPriority{Host: name, Score: s})
		}
	} else if args.Nodes != nil {
		for i := range args.Nodes.Items {
			node := &args.Nodes.Items[i]
			scores = append(scores, HostPriority{Host: node.Metadata.Name, Score: score(pod, node, req[node.Metadata.Name])})
		}
	}
	writeJSON(w, scores)
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
