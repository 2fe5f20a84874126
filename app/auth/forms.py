"""The sign-in forms and the forms that choose a password."""
from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, PasswordField, StringField
from wtforms.validators import EqualTo, InputRequired, Length, ValidationError

from .passwords import LENGTH_MESSAGE, MAX_LENGTH, MIN_LENGTH, password_problem


class LoginForm(FlaskForm):
    """E-mail and password."""

    email = EmailField("E-mail", validators=[InputRequired("Enter your e-mail address"),
                                             Length(max=254)],
                       render_kw={"autocomplete": "username", "autofocus": True})
    password = PasswordField("Password", validators=[InputRequired("Enter your password"),
                                                     Length(max=1024)],
                             render_kw={"autocomplete": "current-password"})


class CodeForm(FlaskForm):
    """The second step of sign-in: a code from the authenticator app, or a recovery code."""

    code = StringField("Code", validators=[InputRequired("Enter the code from your authenticator app"),
                                           Length(max=32)],
                       description="6 digits from your authenticator app, or one of your recovery codes",
                       render_kw={"autocomplete": "one-time-code", "autofocus": True,
                                  "spellcheck": "false", "autocapitalize": "off"})


class ConfirmCodeForm(FlaskForm):
    """Turning two-factor sign-in on: the user's password again, and the first code of the new
    secret."""

    current_password = PasswordField("Your password",
                                     validators=[InputRequired("Enter your password"),
                                                 Length(max=MAX_LENGTH)],
                                     render_kw={"autocomplete": "current-password"})
    code = StringField("Code", validators=[InputRequired("Enter the code from your authenticator app"),
                                           Length(max=32)],
                       description="The 6 digits your authenticator app shows now",
                       render_kw={"autocomplete": "one-time-code", "spellcheck": "false"})


class NewPasswordForm(FlaskForm):
    """A password the user chooses, typed twice (its rules: app/auth/passwords.py)."""

    new_password = PasswordField("New password",
                                 validators=[InputRequired("Enter a new password"),
                                             Length(max=MAX_LENGTH, message=LENGTH_MESSAGE)],
                                 description=f"At least {MIN_LENGTH} characters; a phrase of "
                                             "uncommon words is easiest to remember",
                                 render_kw={"autocomplete": "new-password"})
    confirm = PasswordField("New password again",
                            validators=[InputRequired("Type the new password again"),
                                        EqualTo("new_password", "The two passwords differ")],
                            render_kw={"autocomplete": "new-password"})

    def validate_new_password(self, field) -> None:
        """Long enough, and neither common nor made of the account's own e-mail."""
        problem = password_problem(field.data or "", known=_email_words(self.meta.email))
        if problem:
            raise ValidationError(problem)

    class Meta:
        email = ""  # the account's e-mail, given by the view: FlaskForm(meta={"email": ...})


class ChangePasswordForm(NewPasswordForm):
    """The user's own password: the current one first."""

    current_password = PasswordField("Current password",
                                     validators=[InputRequired("Enter your current password"),
                                                 Length(max=MAX_LENGTH)],
                                     render_kw={"autocomplete": "current-password"})


def _email_words(email: str) -> tuple[str, ...]:
    """The e-mail and its parts, which a password must not be built from."""
    local, _, domain = (email or "").partition("@")
    return tuple(part for part in (email, local, *local.replace("_", ".").split("."),
                                   domain.split(".")[0]) if part)
