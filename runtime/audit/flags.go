package audit

import (
	"flag"
	"fmt"
	"time"
)

// BindFlags registers the journal's flags on fs (--audit-retention, --audit-max-entries),
// writing into o; the daemons that record calls (mcpd, the dashboard's) all take them.
func BindFlags(fs *flag.FlagSet, o *Options) {
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	fs.Func("audit-retention", fmt.Sprintf("how long the audit journal keeps an entry (default %s)", DefaultRetention), func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration such as 2160h, got %q", s)
		}
		o.Retention = d
		return nil
	})
	fs.IntVar(&o.MaxEntries, "audit-max-entries", o.MaxEntries, "most audit entries kept per user; the oldest go first")
}
