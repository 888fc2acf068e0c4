module github.com/yaoki-go/yaoki/cmd/yaoki

go 1.26

require (
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	github.com/yaoki-go/yaoki v0.0.0-00010101000000-000000000000
	go.yaml.in/yaml/v3 v3.0.6
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect

replace github.com/yaoki-go/yaoki => ../..
