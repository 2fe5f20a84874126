"""The sign-in form."""
from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, PasswordField
from wtforms.validators import InputRequired, Length


class LoginForm(FlaskForm):
    """E-mail and password."""

    email = EmailField("E-mail", validators=[InputRequired("Enter your e-mail address"),
                                             Length(max=254)],
                       render_kw={"autocomplete": "username", "autofocus": True})
    password = PasswordField("Password", validators=[InputRequired("Enter your password"),
                                                     Length(max=1024)],
                             render_kw={"autocomplete": "current-password"})
