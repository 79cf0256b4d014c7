package main

import "testing"

// The timeline follows the pages' cursors: forward when it prints every
// match, back from the newest for --limit; the output is the same as one
// page's, in both modes.
func TestTimelinePages(t *testing.T) {
	dir := upExample(t)
	saved := timelinePage
	t.Cleanup(func() { timelinePage = saved })
	timelinePage = 3
	goldenCases(t, dir, []goldenCase{
		{"timeline-novox", []string{"timeline", "--node", "novox"}, false, nil},
		{"timeline-applies", []string{"timeline", "--type", "apply.reported", "--limit", "2"}, false, nil},
	})
	for _, m := range modes {
		t.Run(m.name+"/limit across pages", func(t *testing.T) {
			flags, stop := m.start(t, dir)
			defer stop()
			_, all, _ := mesh(t, append([]string{"timeline", "-o", "json", "--node", "novox"}, flags...)...)
			_, last7, _ := mesh(t, append([]string{"timeline", "-o", "json", "--node", "novox", "--limit", "7"}, flags...)...)
			var a, b []struct{ Position uint64 }
			mustJSON(t, all, &a)
			mustJSON(t, last7, &b)
			if len(b) != 7 || len(a) < 7 || b[0].Position != a[len(a)-7].Position || b[6].Position != a[len(a)-1].Position {
				t.Errorf("--limit 7 over pages of 3: %v, want the last 7 of %v", b, a)
			}
		})
	}
}
