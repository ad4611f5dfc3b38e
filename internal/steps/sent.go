package steps

import (
	"container/list"
	"sync"
)

// maxSentSessions bounds the sessions sentTranscripts remembers.
const maxSentSessions = 100_000

// sentTranscripts remembers, per session, the range of messages this
// worker last sent to the session's runner plugin, so that the next model
// call sends only what is new (pluginapi capability TranscriptCache). It
// is a hint: the plugin answers ErrTranscriptNotCached when it no longer
// has them (it restarted, or dropped them for room), and the whole
// transcript goes again. It forgets the least recently used sessions past
// maxSentSessions.
type sentTranscripts struct {
	mu        sync.Mutex
	lru       *list.List // of *sentRange, most recent first
	bySession map[string]*list.Element
}

type sentRange struct {
	session       string
	from, through int64
}

func (s *sentTranscripts) get(session string) (from, through int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.bySession[session]
	if !ok {
		return 0, 0, false
	}
	r := el.Value.(*sentRange)
	return r.from, r.through, true
}

func (s *sentTranscripts) set(session string, from, through int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lru == nil {
		s.lru, s.bySession = list.New(), map[string]*list.Element{}
	}
	if el, ok := s.bySession[session]; ok {
		r := el.Value.(*sentRange)
		r.from, r.through = from, through
		s.lru.MoveToFront(el)
		return
	}
	s.bySession[session] = s.lru.PushFront(&sentRange{session: session, from: from, through: through})
	for s.lru.Len() > maxSentSessions {
		el := s.lru.Back()
		s.lru.Remove(el)
		delete(s.bySession, el.Value.(*sentRange).session)
	}
}

func (s *sentTranscripts) forget(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.bySession[session]; ok {
		s.lru.Remove(el)
		delete(s.bySession, session)
	}
}
