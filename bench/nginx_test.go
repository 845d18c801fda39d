package bench

import (
	"path/filepath"
	"strings"
	"testing"
)

// nginx's config makes it a streaming reverse proxy beside the router: the directives below,
// each on a line of its own, and every file it writes inside its temp dir.
func TestNginxConfig(t *testing.T) {
	dir := filepath.Join("/tmp", "foresight-bench-nginx-1")
	conf := nginxConfig(dir, "127.0.0.1:8081", []string{"127.0.0.1:9001", "127.0.0.1:9002"})
	lines := map[string]bool{}
	for _, l := range strings.Split(conf, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	tests := []struct {
		name, line string
	}{
		{"in the foreground, so the bench stops it by pid", "daemon off;"},
		{"one worker per core", "worker_processes auto;"},
		{"no access log", "access_log off;"},
		{"error log in the temp dir", "error_log " + dir + "/error.log warn;"},
		{"pid file in the temp dir", "pid " + dir + "/nginx.pid;"},
		{"request bodies' temp files in the temp dir", "client_body_temp_path " + dir + "/client_body_temp;"},
		{"proxy temp files in the temp dir", "proxy_temp_path " + dir + "/proxy_temp;"},
		{"fastcgi temp files in the temp dir", "fastcgi_temp_path " + dir + "/fastcgi_temp;"},
		{"uwsgi temp files in the temp dir", "uwsgi_temp_path " + dir + "/uwsgi_temp;"},
		{"scgi temp files in the temp dir", "scgi_temp_path " + dir + "/scgi_temp;"},
		{"fewest active connections", "least_conn;"},
		{"first upstream", "server 127.0.0.1:9001;"},
		{"second upstream", "server 127.0.0.1:9002;"},
		{"kept-alive upstream connections", "keepalive 256;"},
		{"loopback listener", "listen 127.0.0.1:8081;"},
		{"to the upstream block", "proxy_pass http://servers;"},
		{"HTTP/1.1 upstream, needed for keep-alive", "proxy_http_version 1.1;"},
		{"no Connection: close upstream", `proxy_set_header Connection "";`},
		{"tokens relayed as they come", "proxy_buffering off;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !lines[tt.line] {
				t.Errorf("no line %q in\n%s", tt.line, conf)
			}
		})
	}
	// Every absolute path the config names is in the temp dir: nothing under /etc or /var
	// ("location /" is a URL path).
	for _, f := range strings.Fields(conf) {
		if strings.HasPrefix(f, "/") && f != "/" && !strings.HasPrefix(f, dir+"/") {
			t.Errorf("path %q outside %s", f, dir)
		}
	}
}

// Without nginx on PATH or in /usr/sbin, --reference nginx fails saying how to install it.
func TestFindNginxMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	saved := nginxPaths
	nginxPaths = []string{filepath.Join(t.TempDir(), "nginx")}
	defer func() { nginxPaths = saved }()
	_, err := FindNginx()
	if err == nil || !strings.Contains(err.Error(), "apt-get install nginx-light") || !strings.Contains(err.Error(), "--reference") {
		t.Errorf("FindNginx without nginx: %v, want an error naming --reference and apt-get install nginx-light", err)
	}
}
