package auth

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTokenFile(t *testing.T) {
	tests := map[string]struct {
		file    string
		want    map[string]User // token -> user
		wantErr string
	}{
		"three columns": {
			file: "t1-0123456789abcdef,alice,1\n",
			want: map[string]User{"t1-0123456789abcdef": {Name: "alice", UID: "1"}},
		},
		"quoted groups": {
			file: "t1-0123456789abcdef,alice,1,\"voda:users,voda:admins\"\n",
			want: map[string]User{"t1-0123456789abcdef": {Name: "alice", UID: "1", Groups: []string{"voda:users", "voda:admins"}}},
		},
		"one unquoted group, spaces after commas, blank lines, CRLF": {
			file: "\r\nt1-0123456789abcdef, alice, 1, voda:users\r\n\r\nt2-0123456789abcdef,bob,,\" a , ,b \"\r\n",
			want: map[string]User{
				"t1-0123456789abcdef": {Name: "alice", UID: "1", Groups: []string{"voda:users"}},
				"t2-0123456789abcdef": {Name: "bob", Groups: []string{"a", "b"}},
			},
		},
		"no trailing newline": {
			file: "t1-0123456789abcdef,alice,1",
			want: map[string]User{"t1-0123456789abcdef": {Name: "alice", UID: "1"}},
		},
		"duplicate token": {
			file:    "t1-0123456789abcdef,alice,1\nt2-0123456789abcdef,bob,2\nt1-0123456789abcdef,carol,3\n",
			wantErr: "line 3: the token of line 1 again",
		},
		"empty token": {
			file:    "t1-0123456789abcdef,alice,1\n,bob,2\n",
			wantErr: "line 2: empty token",
		},
		"token with a space": {
			file:    "\"t 1\",alice,1\n",
			wantErr: "line 1: the token holds a space",
		},
		"token one short of the minimum": {
			file:    "t1-0123456789abcdef,alice,1\n0123456789abcde,bob,2\n",
			wantErr: "line 2: a token of 15 characters; tokens need at least 16",
		},
		"token of one character": {
			file:    "x,alice,1\n",
			wantErr: "line 1: a token of 1 characters; tokens need at least 16",
		},
		"minimum counts characters, not bytes": {
			file:    "ééééééééééééééé,alice,1\n",
			wantErr: "line 1: a token of 15 characters",
		},
		"token of exactly the minimum": {
			file: "0123456789abcdef,alice,1\n",
			want: map[string]User{"0123456789abcdef": {Name: "alice", UID: "1"}},
		},
		"empty user": {
			file:    "t1-0123456789abcdef, ,1\n",
			wantErr: "line 1: empty user name",
		},
		"too many columns (unquoted groups)": {
			file:    "t1-0123456789abcdef,alice,1\nt2-0123456789abcdef,bob,2,g1,g2\n",
			wantErr: "line 2: 5 columns",
		},
		"too few columns": {
			file:    "t1-0123456789abcdef,alice\n",
			wantErr: "line 1: 2 columns",
		},
		"bad quoting": {
			file:    "t1-0123456789abcdef,alice,1,\"g1\n",
			wantErr: "line 1",
		},
		"comment is not special": {
			file:    "# tokens\n",
			wantErr: "line 1: 1 columns",
		},
		"empty file": {
			file:    "\n\n",
			wantErr: "no tokens",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tf, err := ParseTokenFile([]byte(tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]User{}
			for token := range tc.want {
				if u, ok := authenticate(t, tf, "Bearer "+token); ok {
					got[token] = u
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("users (-want,+got):\n%s", diff)
			}
			if tf.Len() != len(tc.want) {
				t.Errorf("Len() = %d, want %d", tf.Len(), len(tc.want))
			}
		})
	}
}

func authenticate(t *testing.T, a Authenticator, header string) (User, bool) {
	t.Helper()
	r, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://voda/api/v1/jobs", nil)
	if header != "" {
		r.Header.Set("Authorization", header)
	}
	u, ok, err := a.Authenticate(r)
	if err != nil {
		t.Fatal(err)
	}
	return u, ok
}

func TestTokenFileAuthenticate(t *testing.T) {
	tf, err := ParseTokenFile([]byte("secret-0123456789,alice,1,voda:users\n"))
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]bool{
		"":                               false,
		"Bearer secret-0123456789":       true,
		"bearer secret-0123456789":       true,
		"Bearer  secret-0123456789 ":     true,
		"Bearer secret-012345678":        false,
		"Bearer secret-01234567890":      false,
		"Bearer ":                        false,
		"Basic c2VjcmV0LTAxMjM0NTY3ODk=": false,
		"secret-0123456789":              false,
		"Bearer alice":                   false,
		"BearerXsecret-0123456789":       false,
		"Bearer secret-0123456789, foo":  false,
	} {
		if _, ok := authenticate(t, tf, header); ok != want {
			t.Errorf("Authorization %q: authenticated %v, want %v", header, ok, want)
		}
	}
	u, _ := authenticate(t, tf, "Bearer secret-0123456789")
	u.Groups[0] = "voda:admins"
	if again, _ := authenticate(t, tf, "Bearer secret-0123456789"); again.Groups[0] != "voda:users" {
		t.Errorf("a caller changed the stored groups: %v", again.Groups)
	}
}

func TestLoadTokenFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(good, []byte("t1-0123456789abcdef,alice,1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tf, err := LoadTokenFile(good); err != nil || tf.Len() != 1 {
		t.Fatalf("LoadTokenFile: %v, %v", tf, err)
	}
	big := filepath.Join(dir, "big.csv")
	line := "t-0123456789abcdef,alice,1\n"
	if err := os.WriteFile(big, []byte(strings.Repeat(line, MaxTokenFileBytes/len(line)+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokenFile(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file over the limit: %v, want too large", err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("t1-0123456789abcdef,alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokenFile(bad); err == nil || !strings.Contains(err.Error(), bad+": line 1") {
		t.Errorf("a bad file: %v, want its path and line", err)
	}
	if _, err := LoadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file: no error")
	}
}

// FuzzParseTokenFile: the parser never panics, and every token it
// accepts authenticates as the user of its line.
func FuzzParseTokenFile(f *testing.F) {
	f.Add([]byte("t1-0123456789abcdef,alice,1,\"voda:users,voda:admins\"\nt2-0123456789abcdef,bob,2\n"))
	f.Add([]byte("\"a\"\"b\",c,d\r\n"))
	f.Add([]byte(",,,\n"))
	f.Add([]byte("t1-0123456789abcdef,alice,1,\"g1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := ParseTokenFile(data)
		if err != nil {
			return
		}
		if tf.Len() == 0 {
			t.Fatal("accepted a file with no tokens")
		}
		for _, u := range tf.users {
			if u.Name == "" {
				t.Fatalf("accepted an empty user name: %+v", u)
			}
		}
	})
}
