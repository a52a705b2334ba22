package correlate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// maxListed bounds the profile types or services an empty answer lists.
const maxListed = 20

// WhyEmpty says why a profile or series query over [start, end] found nothing: a profile type
// Pyroscope does not hold there, or a service it holds no profiles of, each with what it does
// hold; otherwise that nothing matched in that window. An empty flame graph is otherwise silent,
// and an empty series answer has no frame at all. Lookups that fail leave their check out.
func WhyEmpty(ctx context.Context, pyro ProfileStore, pq *models.ProfileQuery, start, end time.Time) string {
	window := fmt.Sprintf("between %s and %s", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	if types, err := pyro.ProfileTypes(ctx, start, end); err == nil {
		var ids []string
		for _, t := range types {
			ids = append(ids, t.ID)
		}
		if !slices.Contains(ids, pq.ProfileTypeID) {
			return fmt.Sprintf("Nothing to show: Pyroscope holds no profiles of type %q %s; it holds %s.", pq.ProfileTypeID, window, listed(ids, "no profile type at all"))
		}
	}
	if service, ok := wantedService(pq.LabelSelector); ok {
		if services, err := pyro.LabelValues(ctx, "service_name", "{}", start, end); err == nil && !slices.Contains(services, service) {
			return fmt.Sprintf("Nothing to show: Pyroscope holds no profiles of service_name %q %s; the services it holds are %s.", service, window, listed(services, "none"))
		}
	}
	return fmt.Sprintf("Nothing to show: no %s samples match %s %s (profilers upload every 10–15 s: a recent window may not be in yet).", pq.ProfileTypeID, pq.LabelSelector, window)
}

// wantedService is the service an equality matcher on service_name asks for.
func wantedService(selector string) (string, bool) {
	ms, err := models.ParseLabelSelector(selector)
	if err != nil {
		return "", false
	}
	for _, m := range ms {
		if m.Name == "service_name" && m.Type == labels.MatchEqual && m.Value != "" {
			return m.Value, true
		}
	}
	return "", false
}

func listed(names []string, none string) string {
	switch {
	case len(names) == 0:
		return none
	case len(names) > maxListed:
		return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return strings.Join(names, ", ")
}
