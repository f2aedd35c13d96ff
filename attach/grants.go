package attach

import (
	"encoding/json"

	"github.com/ardgate/ardgate/attach/credstore"
	"github.com/ardgate/ardgate/attach/oauth"
)

// With a credentials store (Manager.Credentials), the OAuth grants the
// user gives outlive the gateway: a grant obtained is put in the store,
// under its server's URL (credstore.GrantID), and again at each refresh;
// a session that holds no grant for a server looks there first; a grant
// the server refuses is deleted. Without one, grants live in each
// session's memory only (auth.go), as they always did.

// savedGrant is the grant the store keeps for the server at serverURL,
// restored, with its refreshes put back; nil when there is none, or no
// store. One that cannot be used is deleted.
func (m *Manager) savedGrant(serverURL string) *oauth.Grant {
	id, err := credstore.GrantID(serverURL)
	if m.Credentials == nil || err != nil {
		return nil
	}
	data, ok := m.Credentials.Get(credstore.OAuthGrant, id)
	if !ok {
		return nil
	}
	var saved oauth.Saved
	var g *oauth.Grant
	if err = json.Unmarshal(data, &saved); err == nil {
		g, err = m.grantConfig().Restore(serverURL, saved)
	}
	if err != nil {
		m.Log.Warn("a saved OAuth grant cannot be used: deleted, to authorize again", "server", redacted(serverURL), "err", err)
		m.deleteGrant(id)
		return nil
	}
	m.persist(serverURL, id, g)
	return g
}

// keepGrant puts g, just obtained for the server at serverURL, in the
// store, and again at each refresh.
func (m *Manager) keepGrant(serverURL string, g *oauth.Grant) {
	id, err := credstore.GrantID(serverURL)
	if m.Credentials == nil || err != nil {
		return
	}
	m.putGrant(serverURL, id, g.Save())
	m.persist(serverURL, id, g)
}

// persist has each refresh of g put it in the store again: a refresh
// token the server rotated is the one that works next time.
func (m *Manager) persist(serverURL, id string, g *oauth.Grant) {
	g.OnChange(func(s oauth.Saved) { m.putGrant(serverURL, id, s) })
}

// forgetGrant deletes the store's grant of the server at serverURL, once
// the server refused g: unless the store holds another grant by then
// (another session's new one), known by its refresh token and client.
func (m *Manager) forgetGrant(serverURL string, g *oauth.Grant) {
	id, err := credstore.GrantID(serverURL)
	if m.Credentials == nil || err != nil {
		return
	}
	data, ok := m.Credentials.Get(credstore.OAuthGrant, id)
	var saved oauth.Saved
	if !ok || json.Unmarshal(data, &saved) != nil {
		return
	}
	if refused := g.Save(); saved.RefreshToken == refused.RefreshToken && saved.ClientID == refused.ClientID {
		m.deleteGrant(id)
	}
}

func (m *Manager) putGrant(serverURL, id string, s oauth.Saved) {
	data, err := json.Marshal(s)
	if err == nil {
		err = m.Credentials.Put(credstore.OAuthGrant, id, data)
	}
	if err != nil {
		// The grant serves the session all the same; only a restart
		// asks the user again.
		m.Log.Warn("an OAuth grant was not saved in the credentials store", "server", redacted(serverURL), "err", err)
	}
}

func (m *Manager) deleteGrant(id string) {
	if err := m.Credentials.Delete(credstore.OAuthGrant, id); err != nil {
		m.Log.Warn("an OAuth grant was not deleted from the credentials store", "err", err)
	}
}

// grantConfig is how a restored grant refreshes: through the guarded
// client, as a flow's grant does.
func (m *Manager) grantConfig() *oauth.Config {
	return &oauth.Config{HTTP: m.HTTP, Dialer: m.Dialer, ClientName: "ardgate"}
}
