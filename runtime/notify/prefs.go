package notify

import (
	"errors"
	"fmt"
	"time"
)

// Prefs are one user's choices: which kinds of events reach them, for all bots and per bot,
// the hours in which messages arrive silently, and the hour of the daily summary.
type Prefs struct {
	// Events turns kinds on or off for every bot; a kind not named here has its default
	// (DefaultOn).
	Events map[Kind]bool `json:"events,omitempty"`
	// Bots turns kinds on or off for one bot (by ID), over Events.
	Bots map[string]map[Kind]bool `json:"bots,omitempty"`
	// Quiet is when messages arrive without a sound (nil: never).
	Quiet *Quiet `json:"quiet,omitempty"`
	// SummaryHour is the hour (0-23, in Zone) of the daily summary; nil: none.
	SummaryHour *int `json:"summaryHour,omitempty"`
	// Zone is the IANA time zone of Quiet and SummaryHour ("" is UTC).
	Zone string `json:"zone,omitempty"`
}

// Quiet hours, from From to To (minutes after midnight; To before From spans midnight).
type Quiet struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// DefaultOn says whether a kind reaches a user who chose nothing: what they must know
// (pauses and resumes, refusals, lost signals, a connection that stopped working,
// approvals), not every fill, and no summary.
func DefaultOn(k Kind) bool {
	switch k {
	case Fill, DailySummary:
		return false
	}
	return k.Valid()
}

// Wants says whether e reaches the user.
func (p Prefs) Wants(e Event) bool {
	if on, ok := p.Bots[e.BotID][e.Kind]; ok && e.BotID != "" {
		return on
	}
	if on, ok := p.Events[e.Kind]; ok {
		return on
	}
	return DefaultOn(e.Kind)
}

// Silent says whether a message of e sent at now should arrive without a sound: inside the
// quiet hours, unless it is urgent.
func (p Prefs) Silent(e Event, now time.Time) bool {
	if p.Quiet == nil || e.Kind.Urgent() || p.Quiet.From == p.Quiet.To {
		return false
	}
	loc, err := time.LoadLocation(p.Zone)
	if err != nil {
		loc = time.UTC
	}
	t := now.In(loc)
	m := t.Hour()*60 + t.Minute()
	if p.Quiet.From < p.Quiet.To {
		return m >= p.Quiet.From && m < p.Quiet.To
	}
	return m >= p.Quiet.From || m < p.Quiet.To
}

// Validate says what is wrong with p, if anything.
func (p Prefs) Validate() error {
	var errs []error
	for k := range p.Events {
		if !k.Valid() {
			errs = append(errs, fmt.Errorf("unknown event %q", k))
		}
	}
	for bot, m := range p.Bots {
		for k := range m {
			if !k.Valid() {
				errs = append(errs, fmt.Errorf("bot %s: unknown event %q", bot, k))
			}
		}
	}
	if q := p.Quiet; q != nil && (q.From < 0 || q.From >= 24*60 || q.To < 0 || q.To >= 24*60) {
		errs = append(errs, errors.New("quiet hours must be minutes of the day (0-1439)"))
	}
	if h := p.SummaryHour; h != nil && (*h < 0 || *h > 23) {
		errs = append(errs, errors.New("the summary hour must be 0-23"))
	}
	if _, err := time.LoadLocation(p.Zone); err != nil {
		errs = append(errs, fmt.Errorf("unknown time zone %q", p.Zone))
	}
	return errors.Join(errs...)
}
