package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "queue-url")
	if err := os.WriteFile(file, []byte("amqp://voda:s3cret@rabbitmq:5672/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(name string) string {
			if name != envQueue {
				t.Errorf("getenv(%q), want %s", name, envQueue)
			}
			return v
		}
	}
	for _, c := range []struct {
		name, flag, file, env string
		want, wantErr         string
	}{
		{name: "nothing: the in-process queue"},
		{name: "flag", flag: "amqp://flag/", env: "amqp://env/", want: "amqp://flag/"},
		{name: "file, trimmed", file: file, env: "amqp://env/", want: "amqp://voda:s3cret@rabbitmq:5672/"},
		{name: "environment", env: " amqp://env/\n", want: "amqp://env/"},
		{name: "flag and file", flag: "amqp://flag/", file: file, wantErr: "--queue and --queue-file: give one, not both"},
		{name: "missing file", file: filepath.Join(dir, "nope"), wantErr: "--queue-file: open " + filepath.Join(dir, "nope")},
		{name: "empty file", file: empty, wantErr: "--queue-file: " + empty + " is empty"},
	} {
		got, err := secretURL("queue", c.flag, c.file, envQueue, env(c.env))
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: %q, %v; want an error with %q and no password", c.name, got, err, c.wantErr)
			}
		case err != nil || got != c.want:
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
