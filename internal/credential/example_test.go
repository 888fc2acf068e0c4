package credential_test

import (
	"fmt"
	"net/url"

	"github.com/yaoki-go/yaoki/internal/credential"
)

func ExampleRedactedURL() {
	u, _ := url.Parse("https://bob:pa55@api.example.com/v1/orders?page=2&api_key=s3cr3t")
	fmt.Println(credential.RedactedURL(u))
	// Output: https://bob:xxxxx@api.example.com/v1/orders?page=2&api_key=xxxxx
}
