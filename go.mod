module github.com/yaoki-go/yaoki

go 1.26
