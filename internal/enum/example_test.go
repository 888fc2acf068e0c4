package enum_test

import (
	"fmt"

	"github.com/yaoki-go/yaoki/internal/enum"
)

type Mode uint8

const (
	Off Mode = iota
	Auto
)

var modeNames = [...]string{Off: "off", Auto: "auto"}

func (m Mode) String() string { return enum.Name(modeNames[:], m, "Mode(%d)") }

func Example() {
	m, ok := enum.ParseFold[Mode](modeNames[:], "AUTO")
	fmt.Println(m, ok, Mode(9))
	fmt.Println("want", enum.List(modeNames[:]))
	// Output:
	// auto true Mode(9)
	// want off or auto
}
