package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinTokenLength is the fewest characters a token of a token file may
// have: a short token can be guessed, and one guessed token acts as its
// user. 16 random characters of a base64 alphabet are 96 bits, well out
// of reach of guessing over HTTP; `openssl rand -base64 24` makes 32.
const MinTokenLength = 16

// MaxTokenFileBytes bounds a token file: ample for tens of thousands of
// users, and a mistaken path to a huge file fails at once.
const MaxTokenFileBytes = 4 << 20

// TokenFile authenticates bearer tokens listed in a file of
// kube-apiserver's --token-auth-file format: one CSV record a line,
//
//	token,user,uid,"group1,group2"
//
// with the groups column optional. Unlike kube-apiserver, which warns and
// goes on, a record with an empty token, a token shorter than
// MinTokenLength characters, a token given twice, an empty user name or
// more than four columns is an error naming its line:
// a server should not start with a file that does not mean what its
// operator thinks. Blank lines are skipped; there are no comments (a line
// starting with # would be a token), as in kube-apiserver.
//
// Tokens are kept only as SHA-256 hashes, and looked up by the hash of
// the presented token, so lookups take no time that depends on how much
// of a real token a guess matches.
type TokenFile struct {
	users map[[sha256.Size]byte]User
}

var _ Authenticator = (*TokenFile)(nil)

// LoadTokenFile reads a token file.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxTokenFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if len(data) > MaxTokenFileBytes {
		return nil, fmt.Errorf("token file %s: larger than %d bytes", path, MaxTokenFileBytes)
	}
	tf, err := ParseTokenFile(data)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return tf, nil
}

// ParseTokenFile parses a token file's contents. A file with no record
// is an error: it would lock every caller out.
func ParseTokenFile(data []byte) (*TokenFile, error) {
	if len(data) > MaxTokenFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxTokenFileBytes)
	}
	rd := csv.NewReader(bytes.NewReader(data))
	rd.FieldsPerRecord = -1
	rd.TrimLeadingSpace = true
	tf := &TokenFile{users: map[[sha256.Size]byte]User{}}
	firstLine := map[[sha256.Size]byte]int{}
	for {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err // a *csv.ParseError names its line
		}
		line, _ := rd.FieldPos(0)
		u, token, err := parseRecord(rec)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		h := sha256.Sum256([]byte(token))
		if first, dup := firstLine[h]; dup {
			return nil, fmt.Errorf("line %d: the token of line %d again; each token must name one user", line, first)
		}
		firstLine[h] = line
		tf.users[h] = u
	}
	if len(tf.users) == 0 {
		return nil, errors.New("no tokens; want lines of token,user,uid[,\"group1,group2\"]")
	}
	return tf, nil
}

func parseRecord(rec []string) (User, string, error) {
	if len(rec) < 3 || len(rec) > 4 {
		return User{}, "", fmt.Errorf("%d columns; want token,user,uid[,\"group1,group2\"] (quote a list of groups)", len(rec))
	}
	token := rec[0]
	switch {
	case token == "":
		return User{}, "", errors.New("empty token")
	case strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return User{}, "", errors.New("the token holds a space or an unprintable character, which no Authorization header can carry")
	case utf8.RuneCountInString(token) < MinTokenLength:
		// The error does not quote the token: it is a secret.
		return User{}, "", fmt.Errorf("a token of %d characters; tokens need at least %d, as a short one can be guessed", utf8.RuneCountInString(token), MinTokenLength)
	case strings.TrimSpace(rec[1]) == "":
		return User{}, "", errors.New("empty user name")
	}
	u := User{Name: strings.TrimSpace(rec[1]), UID: strings.TrimSpace(rec[2])}
	if len(rec) == 4 {
		for _, g := range strings.Split(rec[3], ",") {
			if g = strings.TrimSpace(g); g != "" {
				u.Groups = append(u.Groups, g)
			}
		}
	}
	return u, token, nil
}

// Len is the number of tokens.
func (t *TokenFile) Len() int { return len(t.users) }

// Authenticate looks the request's bearer token up.
func (t *TokenFile) Authenticate(r *http.Request) (User, bool, error) {
	token, ok := BearerToken(r)
	if !ok {
		return User{}, false, nil
	}
	u, ok := t.users[sha256.Sum256([]byte(token))]
	u.Groups = slices.Clone(u.Groups) // the caller may change its copy
	return u, ok, nil
}
