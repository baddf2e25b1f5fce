package review

// A Style wraps text in the markers of one of act's colours, which a
// TermWriter of the same nonce turns into the colour's SGR sequence, or
// drops. The zero Style (no nonce) marks nothing: the text is plain, as
// a sink that is no terminal (a hook's reason, an MCP text) gets it.
//
// review knows act's colours only by these ids; what each looks like is
// the caller's (cmd maps them to lipgloss styles: StyleIDs).
type Style struct {
	ID    byte
	Nonce []byte
}

// Render returns text between the markers of the style.
func (s Style) Render(text string) string {
	if text == "" || len(s.Nonce) == 0 {
		return text
	}
	return string(markOpen) + string(s.Nonce) + string(rune(s.ID)) + string(markClose) + text +
		string(markOpen) + string(s.Nonce) + string(rune(StyleEnd)) + string(markClose)
}

// The style ids.
const (
	StyleCreate byte = 'c' + iota
	StyleModify
	StyleRemove
	StyleErr
	StyleWarn
	StyleBold
	StyleFaint
)

// StyleEnd is the id that ends a style.
const StyleEnd byte = '0'

// StyleIDs are the ids of act's styles.
var StyleIDs = []byte{StyleCreate, StyleModify, StyleRemove, StyleErr, StyleWarn, StyleBold, StyleFaint}

// Styles are act's colours, marked with one nonce. The zero Styles are
// plain text.
type Styles struct {
	Create, Modify, Remove, Err, Warn, Bold, Faint Style
}

// NewStyles returns the styles marked with nonce.
func NewStyles(nonce []byte) Styles {
	return Styles{
		Create: Style{StyleCreate, nonce}, Modify: Style{StyleModify, nonce}, Remove: Style{StyleRemove, nonce},
		Err: Style{StyleErr, nonce}, Warn: Style{StyleWarn, nonce}, Bold: Style{StyleBold, nonce}, Faint: Style{StyleFaint, nonce},
	}
}
