package simcli

import "testing"

// The recorded command line is what a shell reads back as the arguments,
// without the flags that do not change the results.
func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sim"}, "yaoki sim"},
		{[]string{"sim", "outage", "--out", "", "--p", "0.1,1"}, "yaoki sim outage --out '' --p 0.1,1"},
		{[]string{"sim", "ratelimit", "--policies", "yaoki, retrying at once"}, "yaoki sim ratelimit --policies 'yaoki, retrying at once'"},
		{[]string{"sim", "--name", "it's mine"}, `yaoki sim --name 'it'\''s mine'`},
		{[]string{"sim", "herd", "--workers", "3", "--seed", "2"}, "yaoki sim herd --seed 2"},
		{[]string{"sim", "--workers=1", "--progress", "--progress=false", "--seed=2"}, "yaoki sim --seed=2"},
		{[]string{"sim", "--policy", "my file.yaml", "--format", "json"}, "yaoki sim --policy 'my file.yaml' --format json"},
	} {
		if got := commandLine(c.args); got != c.want {
			t.Errorf("commandLine(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}
