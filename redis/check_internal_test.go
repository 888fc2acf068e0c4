package redis

import (
	"strings"
	"testing"
)

func FuzzParseInfo(f *testing.F) {
	f.Add("# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n# Persistence\r\naof_enabled:0\r\n")
	f.Add("maxmemory:104857600\nmaxmemory_policy:allkeys-lru\naof_enabled:1\n")
	f.Add("maxmemory:-1\nmaxmemory_policy:x\naof_enabled:2")
	f.Add("")
	f.Fuzz(func(t *testing.T, info string) {
		e, err := parseInfo(info)
		if err != nil {
			if e != nil || !strings.HasPrefix(err.Error(), "redis: idempotency check: ") {
				t.Fatalf("parseInfo(%q) = %v, %v: an error comes alone and names the package", info, e, err)
			}
			return
		}
		if e.MaxmemoryPolicy == "" || e.Maxmemory < 0 || e.Evicts != (e.Maxmemory > 0 && e.MaxmemoryPolicy != "noeviction") {
			t.Fatalf("parseInfo(%q) = %+v: inconsistent", info, e)
		}
	})
}

func TestParseInfo(t *testing.T) {
	e, err := parseInfo("# Memory\r\nused_memory:1\r\nmaxmemory:1048576\r\nmaxmemory_policy:volatile-ttl\r\n# Persistence\r\naof_enabled:1\r\n")
	if err != nil || !e.Evicts || e.NotAppendOnly || e.Maxmemory != 1<<20 || e.MaxmemoryPolicy != "volatile-ttl" {
		t.Fatalf("got %+v, %v", e, err)
	}
	if e.ConnectedReplicas != -1 {
		t.Fatalf("INFO without connected_slaves: ConnectedReplicas %d, want -1", e.ConnectedReplicas)
	}
	if e, err := parseInfo("maxmemory:0\r\nmaxmemory_policy:noeviction\r\naof_enabled:1\r\n# Replication\r\nrole:master\r\nconnected_slaves:2\r\n"); err != nil || e.ConnectedReplicas != 2 {
		t.Fatalf("connected_slaves:2: got %+v, %v", e, err)
	}
	if _, err := parseInfo("maxmemory:0\r\n"); err == nil || !strings.Contains(err.Error(), "aof_enabled") {
		t.Fatalf("INFO without its fields: %v, want an error saying what is missing", err)
	}
}
