package failpoint

import "testing"

func TestValue(t *testing.T) {
	defer func(p string) { points = p }(points)
	points = "no-tree,crash=acquire:after-temp"
	if !On(NoTree) || On(BrokenSlots) {
		t.Fatalf("On: no-tree %v broken-slots %v, want true false", On(NoTree), On(BrokenSlots))
	}
	if v, ok := Value(Crash); !ok || v != "acquire:after-temp" {
		t.Fatalf("Value(crash) = %q %v", v, ok)
	}
	if !Armed("acquire:after-temp") || Armed("renew:after-temp") {
		t.Fatal("Armed names the wrong point")
	}
	At("renew:after-temp") // not armed: returns
	points = ""
	if On(NoTree) || Armed("acquire:after-temp") {
		t.Fatal("an empty list sets nothing")
	}
}
