package auth

import (
	"context"
	"testing"
)

func TestUserInContext(t *testing.T) {
	if _, ok := UserFrom(context.Background()); ok {
		t.Error("a context without a user has one")
	}
	u, ok := UserFrom(WithUser(context.Background(), User{Name: "alice"}))
	if !ok || u.Name != "alice" {
		t.Errorf("UserFrom = %+v, %v; want alice", u, ok)
	}
}
