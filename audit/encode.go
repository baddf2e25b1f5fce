package audit

import (
	"errors"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// marshalStatement encodes st exactly as json.Marshal does (the same
// bytes: field order, omitempty and omitzero, HTML escaping, sorted map
// keys), without reflection. An act command appends a record or two and
// exits, so encoding/json would build its encoders for the Statement's
// types in every process: about a quarter of a millisecond, as much as the
// append's fdatasync (bench row 8). TestMarshalStatement holds it to
// json.Marshal's output.
func marshalStatement(st *Statement) ([]byte, error) {
	e := jenc{b: make([]byte, 0, 2048)}
	e.raw(`{"_type":`)
	e.str(st.Type)
	e.raw(`,"subject":`)
	if st.Subject == nil {
		e.raw("null")
	} else {
		e.raw("[")
		for i, s := range st.Subject {
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"name":`)
			e.str(s.Name)
			e.raw(`,"digest":`)
			if s.Digest == nil {
				e.raw("null")
			} else {
				e.raw("{")
				keys := make([]string, 0, len(s.Digest))
				for k := range s.Digest {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for j, k := range keys {
					if j > 0 {
						e.raw(",")
					}
					e.str(k)
					e.raw(":")
					e.str(s.Digest[k])
				}
				e.raw("}")
			}
			e.raw("}")
		}
		e.raw("]")
	}
	e.raw(`,"predicateType":`)
	e.str(st.PredicateType)
	p := &st.Predicate
	e.raw(`,"predicate":{"version":`)
	e.int(int64(p.Version))
	e.raw(`,"seq":`)
	e.b = strconv.AppendUint(e.b, p.Seq, 10)
	e.raw(`,"prev":`)
	e.str(p.Prev)
	e.raw(`,"time":`)
	e.time(p.Time)
	ev := &p.Event
	e.raw(`,"event":`)
	e.str(ev.Name)
	e.optStr(`,"action_id":`, ev.ActionID)
	e.optStr(`,"plan_id":`, ev.PlanID)
	e.optStr(`,"descriptor_sha256":`, ev.DescriptorSHA256)
	e.optStr(`,"status":`, ev.Status)
	e.raw(`,"exit_code":`)
	e.int(int64(ev.ExitCode))
	e.optStr(`,"reason":`, ev.Reason)
	if len(ev.Rules) > 0 {
		e.raw(`,"rules":`)
		e.strs(ev.Rules)
	}
	if r := ev.Risk; r != nil {
		e.raw(`,"risk":{`)
		e.fields(r.Declared != "", `"declared":`, func() { e.str(r.Declared) },
			r.Assessed != "", `"assessed":`, func() { e.str(r.Assessed) })
		e.raw("}")
	}
	if po := ev.Policy; po != nil {
		e.raw(`,"policy":{`)
		e.fields(po.Mode != "", `"mode":`, func() { e.str(po.Mode) },
			po.Source != "", `"source":`, func() { e.str(po.Source) })
		e.raw("}")
	}
	if a := ev.Approval; a != nil {
		e.raw(`,"approval":{"via":`)
		e.str(a.Via)
		e.raw(`,"uid":`)
		e.int(int64(a.UID))
		e.optStr(`,"user":`, a.User)
		e.optStr(`,"principal":`, a.Principal)
		e.optStr(`,"key_fingerprint":`, a.KeyFingerprint)
		e.optStr(`,"reported":`, a.Reported)
		e.raw("}")
	}
	e.optStr(`,"via":`, ev.Via)
	if c := ev.Changes; c != nil {
		e.raw(`,"changes":{"created":`)
		e.int(int64(c.Created))
		e.raw(`,"modified":`)
		e.int(int64(c.Modified))
		e.raw(`,"deleted":`)
		e.int(int64(c.Deleted))
		if len(c.Files) > 0 {
			e.raw(`,"files":[`)
			for i := range c.Files {
				f := &c.Files[i]
				if i > 0 {
					e.raw(",")
				}
				e.raw(`{"path":`)
				e.str(f.Path)
				e.raw(`,"kind":`)
				e.str(f.Kind)
				e.optStr(`,"type":`, f.Type)
				e.optStr(`,"mode":`, f.Mode)
				if f.Size != 0 {
					e.raw(`,"size":`)
					e.int(f.Size)
				}
				e.optStr(`,"sha256_before":`, f.SHA256Before)
				e.optStr(`,"sha256_after":`, f.SHA256After)
				e.raw("}")
			}
			e.raw("]")
		}
		e.raw("}")
	}
	if r := ev.Resources; r != nil {
		e.raw(`,"resources":{"cpu_ms":`)
		e.int(r.CPUMillis)
		e.raw(`,"wall_ms":`)
		e.int(r.WallMillis)
		e.raw(`,"max_rss_kib":`)
		e.int(r.MaxRSSKiB)
		if r.DiskBytes != 0 {
			e.raw(`,"disk_bytes":`)
			e.int(r.DiskBytes)
		}
		if r.Processes != 0 {
			e.raw(`,"processes":`)
			e.int(int64(r.Processes))
		}
		e.raw("}")
	}
	if !ev.Started.IsZero() {
		e.raw(`,"started":`)
		e.time(ev.Started)
	}
	if !ev.Finished.IsZero() {
		e.raw(`,"finished":`)
		e.time(ev.Finished)
	}
	e.raw(`,"uid":`)
	e.int(int64(ev.UID))
	e.optStr(`,"user":`, ev.User)
	e.optStr(`,"host":`, ev.Host)
	e.raw(`,"log_level":`)
	e.str(ev.LogLevel)
	e.optStr(`,"output":`, ev.Output)
	if pr := ev.Pruned; pr != nil {
		e.raw(`,"pruned":{"count":`)
		e.b = strconv.AppendUint(e.b, pr.Count, 10)
		e.raw(`,"through_seq":`)
		e.b = strconv.AppendUint(e.b, pr.Through, 10)
		e.raw(`,"before":`)
		e.time(pr.Before)
		e.raw("}")
	}
	if r := ev.Removed; r != nil {
		e.raw(`,"removed":{`)
		comma := false
		for _, f := range []struct {
			key  string
			list []string
		}{{`"plans":`, r.Plans}, {`"backups":`, r.Backups}, {`"kept":`, r.Kept}} {
			if len(f.list) == 0 {
				continue
			}
			if comma {
				e.raw(",")
			}
			e.raw(f.key)
			e.strs(f.list)
			comma = true
		}
		e.raw("}")
	}
	e.raw("}}")
	if e.err != nil {
		return nil, e.err
	}
	return e.b, nil
}

// appendLine appends l as one line: exactly what a json.Encoder with
// SetEscapeHTML(false) writes for it, '\n' included. It is the one form
// verify accepts (decodeLine); TestAppendLine holds it to encoding/json.
func appendLine(b []byte, l *line) ([]byte, error) {
	e := jenc{b: b, noHTML: true}
	e.raw("{")
	comma := false
	if l.PayloadType != "" {
		e.raw(`"payloadType":`)
		e.str(l.PayloadType)
		comma = true
	}
	if l.Payload != "" {
		if comma {
			e.raw(",")
		}
		e.raw(`"payload":`)
		e.str(l.Payload)
		comma = true
	}
	if len(l.Signatures) > 0 {
		if comma {
			e.raw(",")
		}
		e.raw(`"signatures":[`)
		for i, sg := range l.Signatures {
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"keyid":`)
			e.str(sg.KeyID)
			e.raw(`,"sig":`)
			e.str(sg.Sig)
			e.raw("}")
		}
		e.raw("]")
		comma = true
	}
	if p := l.Pruned; p != nil {
		if comma {
			e.raw(",")
		}
		e.raw(`"pruned":{"seq":`)
		e.b = strconv.AppendUint(e.b, p.Seq, 10)
		e.raw(`,"leaf":`)
		e.str(p.Leaf)
		e.raw(`,"line":`)
		e.str(p.Line)
		e.raw(`,"time":`)
		e.time(p.Time)
		e.raw("}")
		comma = true
	}
	if comma {
		e.raw(",")
	}
	e.raw(`"checkpoint":`)
	e.str(l.Checkpoint)
	e.raw("}\n")
	if e.err != nil {
		return nil, e.err
	}
	return e.b, nil
}

// jenc appends JSON to b; the first error sticks. noHTML leaves <, > and
// & unescaped, as a json.Encoder with SetEscapeHTML(false) does.
type jenc struct {
	b      []byte
	err    error
	noHTML bool
}

func (e *jenc) raw(s string) { e.b = append(e.b, s...) }
func (e *jenc) int(n int64)  { e.b = strconv.AppendInt(e.b, n, 10) }

func (e *jenc) strs(list []string) {
	e.raw("[")
	for i, s := range list {
		if i > 0 {
			e.raw(",")
		}
		e.str(s)
	}
	e.raw("]")
}

func (e *jenc) optStr(key, s string) {
	if s != "" {
		e.raw(key)
		e.str(s)
	}
}

// fields writes the present ones of two omitempty fields of an object,
// with a comma between them.
func (e *jenc) fields(has1 bool, key1 string, val1 func(), has2 bool, key2 string, val2 func()) {
	if has1 {
		e.raw(key1)
		val1()
	}
	if has2 {
		if has1 {
			e.raw(",")
		}
		e.raw(key2)
		val2()
	}
}

func (e *jenc) time(t time.Time) {
	b, err := t.MarshalJSON()
	if err != nil && e.err == nil {
		e.err = errors.New("json: error calling MarshalJSON for type time.Time: " + err.Error())
	}
	e.b = append(e.b, b...)
}

const hexDigits = "0123456789abcdef"

// str appends s as encoding/json does, with HTML escaping unless noHTML
// (json.Marshal's default is on): invalid UTF-8 becomes U+FFFD, and U+2028
// and U+2029 are escaped.
func (e *jenc) str(s string) {
	html := !e.noHTML
	b := append(e.b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	e.b = append(b, '"')
}
